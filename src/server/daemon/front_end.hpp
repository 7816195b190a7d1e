// promptlyd's network front end: one epoll thread of its own that accepts
// connections, reads request bytes into protocol sessions and writes their
// replies and stream lines. It never runs on the runtime's workers, so the
// daemon keeps answering (stats, rejections) however the job policy hands
// out cores (AMCilk Sec. 4: the external scheduler must be able to observe
// and control an overloaded server).
//
// Invariants:
// * Only the loop thread touches connections; other threads (job
//   completions) reach it through the wakeup object: a dirty list and an
//   eventfd, never a connection directly.
// * Bounded memory per connection: reading stops while the reply bytes the
//   connection holds (unsent output plus replies the session holds behind a
//   waiting one) reach max_output_bytes or the session has
//   max_pending_replies pending (waiting or held); it resumes when they
//   drain (backpressure, never an error). Checked before every read, so
//   a connection passes a bound by at most the replies to one read.
// * At most max_connections connections; one more gets a `rejected` error
//   line and is closed.
// * A connection to a listener with a token that has sent no request with
//   the right token auth_timeout after it was accepted gets a `not_allowed`
//   error line and is closed (OpenSSH's LoginGraceTime): without the token
//   nobody can hold connection slots for long. auth_due holds such
//   connections in accept order, which is deadline order.
// * finish() answers every request that reached the kernel before it: it
//   accepts the listen backlog, reads each connection until it would block
//   (at most max_output_bytes), then ends its input. A connection whose
//   replies are all written is shut down for writing and closed once the
//   peer has taken every byte (SIOCOUTQ 0) with nothing unread, or sent its
//   end of stream (input in between is discarded): a close with unread
//   input would reset the connection and drop replies in flight.
// * finish() returns after that (or when the flush timeout passed) with all
//   descriptors closed.
// * svc.buffered_bytes and svc.connections_reading_paused are the sums of
//   the connections' counted_bytes and counted_paused.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/protocol/protocol.hpp"

namespace promptly::server::daemon {

struct front_end_options {
  std::size_t max_connections = 1024;
  std::size_t max_output_bytes = std::size_t{8} << 20;
  std::size_t max_pending_replies = std::size_t{1} << 16;
  std::chrono::milliseconds auth_timeout{10'000};
};

class front_end {
 public:
  front_end(protocol::service& svc, front_end_options opts);
  ~front_end();
  front_end(const front_end&) = delete;
  front_end& operator=(const front_end&) = delete;

  // Takes ownership of a listening, non-blocking socket. If token is set,
  // its connections must authenticate (protocol::session_options::token).
  // Before start() only.
  void add_listener(int fd, std::optional<std::string> token);
  void start();
  // Stops accepting (after taking the listen backlog), reads and answers
  // what the kernel holds for every connection, writes every reply still
  // due (jobs must be terminal by now: the daemon drains the job server
  // first), waits at most flush_timeout for slow readers, closes everything
  // gracefully and joins the thread. Returns the connections closed with
  // output unsent.
  std::size_t finish(std::chrono::milliseconds flush_timeout);

  struct loop;

 private:
  std::unique_ptr<loop> loop_;
  std::thread thread_;
};

}  // namespace promptly::server::daemon
