// Raw HTTP/1.1 requests for the HTTP API and cluster tests: one request per
// connection (the daemon closes after each), every read bounded by a
// receive timeout so a server that never answers fails the test instead of
// hanging it.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <map>
#include <string>

#include "server/daemon_client.hpp"
#include "server/daemon_socket.hpp"

struct http_reply {
  int status = 0;  // 0: no answer (connection refused, closed or timed out)
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

// Sends `raw` (a whole request, or garbage) and reads the reply to the end of the connection.
inline http_reply http_raw(const std::string& host_port, const std::string& raw,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  http_reply r;
  std::string all;
  try {
    const auto hp = promptly::server::daemon::parse_host_port(host_port);
    promptly::server::daemon::client c(promptly::server::daemon::connect_tcp(hp.host, hp.port));
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    c.send_raw(raw);
    while (auto l = c.receive_line()) all += *l + "\n";
  } catch (const std::exception&) {
    if (all.empty()) return r;
  }
  if (all.size() < 12 || all.rfind("HTTP/1.", 0) != 0) return r;
  r.status = std::stoi(all.substr(9, 3));
  const auto end = all.find("\r\n\r\n");
  std::size_t at = all.find("\r\n") + 2;
  while (end != std::string::npos && at < end) {
    const auto eol = all.find("\r\n", at);
    const std::string line = all.substr(at, eol - at);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    at = eol + 2;
  }
  if (end != std::string::npos) r.body = all.substr(end + 4);
  return r;
}

inline http_reply http_call(const std::string& host_port, const std::string& method, const std::string& path,
                            const std::string& token, const std::string& body = "",
                            std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + host_port + "\r\nConnection: close\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return http_raw(host_port, req + "\r\n" + body, timeout);
}
