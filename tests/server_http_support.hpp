// Raw HTTP/1.1 requests for the HTTP API and cluster tests: one reply read
// at a time (by its Content-Length, chunks, or the end of the connection), so
// a connection can carry request after request (keep-alive); every read is
// bounded by a receive timeout, so a server that never answers fails the
// test instead of hanging it.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "server/daemon/client.hpp"
#include "server/daemon/socket.hpp"

struct http_reply {
  int status = 0;  // 0: no answer (connection refused, closed or timed out)
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  // A header's value, "" if absent (name in lower case).
  [[nodiscard]] std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// One client connection to host_port, request after request.
class http_connection {
 public:
  explicit http_connection(const std::string& host_port, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    try {
      const auto hp = promptly::server::daemon::parse_host_port(host_port);
      c_.emplace(promptly::server::daemon::connect_tcp(hp.host, hp.port));
      timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
      ::setsockopt(c_->fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    } catch (const std::exception&) {
      c_.reset();
    }
  }
  [[nodiscard]] int fd() const { return c_ ? c_->fd() : -1; }
  // Writes raw bytes; false if the connection is gone.
  bool send(const std::string& raw) {
    return c_ && ::send(c_->fd(), raw.data(), raw.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(raw.size());
  }
  // The next reply; status 0 if the connection ends or the timeout passes first.
  http_reply receive() {
    http_reply r;
    std::size_t end;
    while ((end = in_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return r;
    const std::string head = in_.substr(0, end);
    in_.erase(0, end + 4);
    if (head.size() < 12 || head.rfind("HTTP/1.", 0) != 0) return r;
    std::size_t at = head.find("\r\n");
    while (at != std::string::npos && at + 2 < head.size()) {
      const auto eol = head.find("\r\n", at + 2);
      const std::string line = head.substr(at + 2, eol == std::string::npos ? std::string::npos : eol - at - 2);
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        const auto v = line.find_first_not_of(' ', colon + 1);
        r.headers[name] = v == std::string::npos ? "" : line.substr(v);
      }
      at = eol;
    }
    if (r.headers.count("transfer-encoding")) {
      for (;;) {  // chunks: size line, data, CRLF; a 0 size ends them
        std::size_t eol;
        while ((eol = in_.find("\r\n")) == std::string::npos)
          if (!fill()) return r;
        const std::size_t n = std::stoul(in_.substr(0, eol), nullptr, 16);
        while (in_.size() < eol + 2 + n + 2)
          if (!fill()) return r;
        r.body += in_.substr(eol + 2, n);
        in_.erase(0, eol + 2 + n + 2);
        if (n == 0) break;
      }
    } else if (r.headers.count("content-length")) {
      const std::size_t n = std::stoul(r.headers["content-length"]);
      while (in_.size() < n)
        if (!fill()) return r;
      r.body = in_.substr(0, n);
      in_.erase(0, n);
    } else {
      while (fill()) {
      }
      r.body.swap(in_);
    }
    r.status = std::stoi(head.substr(9, 3));
    return r;
  }
  // Whether the server closes the connection (end of stream or reset) with
  // nothing more sent, before the receive timeout.
  bool closed_by_server() {
    if (!in_.empty()) return false;
    char b;
    const ssize_t n = c_ ? ::recv(c_->fd(), &b, 1, 0) : 0;
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

 private:
  bool fill() {
    char buf[4096];
    const ssize_t n = c_ ? ::recv(c_->fd(), buf, sizeof buf, 0) : -1;
    if (n <= 0) return false;
    in_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  std::optional<promptly::server::daemon::client> c_;
  std::string in_;
};

// A request's bytes; keep_alive: without "Connection: close".
inline std::string http_request(const std::string& method, const std::string& path, const std::string& token,
                                const std::string& body = "", bool keep_alive = false) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: x\r\n";
  if (!keep_alive) req += "Connection: close\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return req + "\r\n" + body;
}

// Sends `raw` (a whole request, or garbage) on a new connection and reads one reply.
inline http_reply http_raw(const std::string& host_port, const std::string& raw,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  http_connection c(host_port, timeout);
  if (!c.send(raw)) return {};
  return c.receive();
}

inline http_reply http_call(const std::string& host_port, const std::string& method, const std::string& path,
                            const std::string& token, const std::string& body = "",
                            std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  return http_raw(host_port, http_request(method, path, token, body), timeout);
}
