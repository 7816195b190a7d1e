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
// * Bounded memory per connection: reading stops while the unsent output
//   exceeds max_output_bytes or the session has too many pending replies;
//   it resumes when they drain (backpressure, never an error).
// * At most max_connections connections; one more gets a `rejected` error
//   line and is closed.
// * A connection to a listener with a token that has sent no request with
//   the right token auth_timeout after it was accepted gets a `not_allowed`
//   error line and is closed (OpenSSH's LoginGraceTime): without the token
//   nobody can hold connection slots for long. auth_due holds such
//   connections in accept order, which is deadline order.
// * finish() returns after every connection's replies are written (or the
//   flush timeout passed) and all descriptors are closed.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/protocol.hpp"

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
  // Stops accepting, closes idle connections, writes every reply still due
  // (jobs must be terminal by now: the daemon drains the job server first),
  // waits at most flush_timeout for slow readers, closes everything and
  // joins the thread. Returns the connections closed with output unsent.
  std::size_t finish(std::chrono::milliseconds flush_timeout);

  struct loop;

 private:
  std::unique_ptr<loop> loop_;
  std::thread thread_;
};

}  // namespace promptly::server::daemon
