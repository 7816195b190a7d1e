// A blocking client of promptlyd's line protocol (docs/server.md): the CLI,
// the tests and the benchmark use it. One thread may send while another
// receives (pipelining); each side is single-threaded.
//
// Invariant: receive() returns whole lines only; a connection closed in the
// middle of a line is an error, never a partial reply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace promptly::server::daemon {

// Where and how to connect: a Unix socket path, or TCP host:port with a token.
struct endpoint {
  std::string unix_path;  // used when tcp is empty
  std::string tcp;        // "host:port"
  std::string token;      // sent as "token" on every request (TCP)
};

class client {
 public:
  explicit client(const endpoint& ep);
  explicit client(int fd) noexcept : fd_(fd) {}
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  client(client&& o) noexcept : fd_(o.fd_), token_(std::move(o.token_)), in_(std::move(o.in_)) { o.fd_ = -1; }

  // Writes the request as one line (with the token if one is set).
  void send(nlohmann::json request);
  // Writes bytes as they are (malformed-input tests).
  void send_raw(std::string_view bytes);
  // The next line, or nullopt at a clean end of stream; throws
  // std::runtime_error if the stream ends inside a line.
  [[nodiscard]] std::optional<std::string> receive_line();
  // The next line parsed; throws std::runtime_error at end of stream.
  [[nodiscard]] nlohmann::json receive();
  // send + receive.
  [[nodiscard]] nlohmann::json call(nlohmann::json request);
  // Half-close: the server sees end of input, and still replies.
  void shutdown_write();
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
  std::string token_;
  std::string in_;
  std::size_t in_off_ = 0;
};

}  // namespace promptly::server::daemon
