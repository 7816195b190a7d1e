// One direction of an HTTP/1.1 connection, parsed with nodejs/http-parser (Debian's
// libhttp-parser-dev): feed it the bytes as they arrive, take each complete message. It stops
// at the end of every message, so bytes of the next (pipelined) message stay with the caller.
// Transport-free: the proxy feeds it from I/O futures, the driver and the origin from blocking
// sockets.
#pragma once

#include <http_parser.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace proxy {

struct http_message {
  std::string method;   // requests
  std::string url;      // requests: as sent (absolute-form for a proxy, or origin-form)
  int status = 0;       // responses
  std::string x_cache;  // the X-Cache header, if any (HIT or MISS from the proxy)
  // The X-Reacted-At-Ns header (the proxy's monotonic clock when its client loop took the
  // request; server.hpp), 0 if absent or not a number.
  std::int64_t reacted_at_ns = 0;
  std::string body;
  bool keep_alive = true;
};

// The clock of X-Reacted-At-Ns: CLOCK_MONOTONIC in nanoseconds (libstdc++'s steady_clock on
// Linux), one clock for every process on the machine, so the driver can subtract its own send
// time from the proxy's reading. The papers' proxy "resp" (I-Cilk Sec. 5.2, Fig. 7) is the
// time from a client's request to the proxy's reaction to it, which for a miss comes long
// before the first byte of the answer.
inline std::int64_t monotonic_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class http_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class http_stream {
 public:
  // HTTP_REQUEST or HTTP_RESPONSE. Messages (headers and body) longer than max_bytes fail.
  http_stream(http_parser_type type, std::size_t max_bytes);
  http_stream(const http_stream&) = delete;
  http_stream& operator=(const http_stream&) = delete;

  // Parses up to n bytes; returns how many it consumed: fewer than n once a message is
  // complete. Throws http_error naming the problem (malformed, too long).
  std::size_t feed(const char* data, std::size_t n);
  // The peer closed the connection: completes a response delimited by end of file. Throws
  // http_error if a message was cut short.
  void finish();
  bool complete() const noexcept { return complete_; }
  // The complete message; the stream then parses the next one.
  http_message take();
  // True if no byte of a message has been seen since the last take().
  bool idle() const noexcept { return !started_; }

 private:
  static int on_begin(http_parser*);
  static int on_url(http_parser*, const char*, std::size_t);
  static int on_header_field(http_parser*, const char*, std::size_t);
  static int on_header_value(http_parser*, const char*, std::size_t);
  static int on_headers_complete(http_parser*);
  static int on_body(http_parser*, const char*, std::size_t);
  static int on_complete(http_parser*);
  bool grow(std::size_t n);

  http_parser parser_{};
  http_parser_settings settings_{};
  http_parser_type type_;
  std::size_t max_bytes_, seen_ = 0;
  http_message msg_;
  std::string field_, reacted_text_;
  enum class field { other, x_cache, reacted_at } in_field_ = field::other;  // the header whose value is arriving
  bool complete_ = false, started_ = false, too_long_ = false;
};

}  // namespace proxy
