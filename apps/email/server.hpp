// The email server: a TCP server on loopback whose work is split across the priorities of
// priorities.hpp. One client-loop task per connection reads requests and acknowledges each at
// once ("resp" in the papers: request to first reaction), then creates the request's task at
// its priority, which does the work and writes the DONE line itself. Each mailbox has a
// periodic checker (every `period`) that compresses the mailbox's uncompressed messages in
// chunks of `chunk`; print and compress of one message take turns through the message's
// future cell.
//
// Shutdown: stop() (or the destructor) ends the accept loop, every connection loop and every
// checker (their waits take the server's stop token), then waits until every request already
// acknowledged has written its DONE line: an acknowledged request is never dropped.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <promptly/io.hpp>
#include <promptly/promptly.hpp>

namespace email {

struct server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;                       // 0: any free port, see server::port()
  std::size_t capacity = 64;                    // messages kept per mailbox (oldest dropped)
  // Plain-text bytes kept per mailbox (oldest messages dropped to make room, as for capacity);
  // a SEND whose text alone is longer is refused. Bounds what the mailboxes hold together at
  // max_mailboxes x mailbox_bytes (1 GiB at the defaults; without it, capacity x max_line:
  // 4 GiB). The benchmark's mailboxes (64 messages of 8 KB) fit.
  std::size_t mailbox_bytes = 1 << 20;
  std::size_t seed_messages = 16;               // messages a new mailbox starts with
  std::size_t seed_bytes = 8192;                // their size
  std::chrono::milliseconds period{250};        // compression check period per mailbox
  std::size_t chunk = 10;                       // messages per compress task
  std::size_t max_line = 64 * 1024;             // longest request line
  // Acknowledged requests not yet answered, at most: per connection, and over the whole server.
  // A request past either limit is refused with "ERR busy ..." (not acknowledged, not run), so a
  // client that pipelines without reading its replies cannot make the server hold unbounded
  // work (each request waiting to write its reply holds a task and its stack).
  std::size_t max_in_flight_per_connection = 64;
  std::size_t max_in_flight = 4096;
  // Connections open at once, at most (each holds a task and its stack while it waits for its
  // client); one more gets "ERR busy: ..." and is closed.
  std::size_t max_connections = 1024;
  // Mailboxes, at most (each keeps up to `capacity` messages and a periodic checker for the
  // server's life); a login that would create one more gets "ERR ..." and stays logged out.
  std::size_t max_mailboxes = 1024;
  // The time a connection may go without sending a complete request line while none of its
  // requests is in flight (waiting for its replies is not idle); 0: no limit. Past it the
  // connection gets "ERR idle: ..." and is closed. Ten minutes is POP3's autologout timer
  // (RFC 1939); without a bound, max_connections clients that connect and send nothing (or
  // trickle a line a byte at a time) would hold every slot for good.
  std::chrono::milliseconds idle_timeout{600'000};
};

// What the server did since it started or since the last RESET.
struct server_counters {
  std::uint64_t requests = 0, sends = 0, sorts = 0, prints = 0, errors = 0;
  std::uint64_t compress_tasks = 0, messages_compressed = 0;
  // Check periods due by the schedule (every mailbox's checker, once per period) and those no
  // check ran for (the checker was late or starved).
  std::uint64_t periods = 0, missed_periods = 0;
  std::uint64_t write_failures = 0;               // DONE lines the client was gone for
  std::uint64_t in_flight = 0;                    // acknowledged requests not yet answered
  std::uint64_t busy = 0;                         // requests refused at an in-flight limit
  std::uint64_t refused_connections = 0;          // connections refused at max_connections
  std::uint64_t timed_out_connections = 0;        // connections closed at idle_timeout
};

class server {
 public:
  // Binds host:port and starts accepting on `rt`, which needs order::size levels.
  // Throws io::error if the address cannot be bound, std::invalid_argument for bad options.
  server(promptly::runtime& rt, server_options options = {});
  server(const server&) = delete;
  server& operator=(const server&) = delete;
  ~server();  // stop()

  std::uint16_t port() const;

  // Ends the server and waits for it (see above). Idempotent. Call it from a thread that is no
  // worker of the runtime.
  void stop();

  server_counters counters() const;
  // counters() plus compress-time percentiles, as the STATS line.
  std::string stats_json() const;

  struct state;  // shared with the server's tasks (server.cpp)

 private:
  std::shared_ptr<state> state_;
  promptly::future<void> accept_loop_;
  bool stopped_ = false;
};

}  // namespace email
