// promptlyd's HTTP endpoints (docs/server.md, "Metrics and health", "HTTP
// API"): /metrics, /healthz and /readyz over cpp-httplib, plus the /v1 API
// when given one (http_api.hpp). Loopback only, unless TLS is configured.
//
// Invariant: no client can hold a thread of the endpoint for long, and
// slow clients do not keep others waiting for a thread. Every connection
// carries one request (no keep-alive); from the moment a thread takes it,
// its request must arrive within request_timeout and each write of its
// response complete within response_timeout, however the client paces its
// bytes (httplib's own timeouts are per read: a header byte every few
// seconds would hold a thread forever), else it is closed. Threads start
// on demand, up to max_threads; beyond, connections wait in accept order
// (at most 1024; more are closed unread). So clients that trickle their
// headers (Slowloris) or never send them delay /healthz not at all while
// they are fewer than max_threads, and by about request_timeout per
// max_threads of them beyond: a liveness probe keeps seeing a healthy daemon.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "server/protocol_service.hpp"

namespace promptly::server::daemon {

class http_api;

struct metrics_http_options {
  unsigned max_threads = 32;
  std::chrono::milliseconds request_timeout{500};
  std::chrono::milliseconds response_timeout{2000};
  // The /v1 API to serve too (outlives this endpoint), or none.
  http_api* api = nullptr;
  // PEM certificate chain and key: serve HTTPS, on any address.
  std::string tls_cert, tls_key;
};

class metrics_http {
 public:
  // Binds spec ("host:port", loopback only without TLS; port 0 = any) and starts serving.
  // Throws std::runtime_error naming spec if it cannot.
  metrics_http(protocol::service& svc, unsigned workers, const std::string& spec, metrics_http_options opts = {});
  ~metrics_http();
  metrics_http(const metrics_http&) = delete;
  metrics_http& operator=(const metrics_http&) = delete;
  [[nodiscard]] std::string url() const;

  class server;

 private:
  std::unique_ptr<server> http_;
  http_api* api_ = nullptr;
  std::string scheme_ = "http";
  std::string host_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace promptly::server::daemon
