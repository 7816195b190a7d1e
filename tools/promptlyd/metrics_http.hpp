// promptlyd's HTTP endpoints (docs/server.md, "Metrics and health", "HTTP
// API"): /metrics, /healthz and /readyz over cpp-httplib, plus the /v1 API
// when given one (http_api.hpp). Loopback only, unless TLS is configured.
//
// Invariant: no client can hold a thread of the endpoint for long, and
// slow clients do not keep others waiting for a thread. A thread takes a
// connection only once its request's head (request line and headers) is all
// here, and holds it only while it serves that request: the rest of the
// request must arrive by the request's deadline and each write of its
// response complete within response_timeout, however the client paces its
// bytes (httplib's own timeouts are per read: a byte every few seconds would
// hold a thread forever), else the connection is closed. Until its head is
// here a connection (a new one, or a kept one whose next request has begun)
// waits in the request set, holding no thread: one poller thread reads its
// bytes as they come; request_timeout after it came there it gets a 408; at
// most 1024 wait so, and one more closes the one waiting longest with a 503
// (it is the nearest to its 408 anyway). Between requests a kept-alive
// connection waits in the idle set, also without a thread, until
// its next request's first bytes arrive or idle_timeout passes (then it is
// closed); at most max_idle wait so, and a connection serves at most
// max_requests requests. Threads start on demand, up to max_threads;
// beyond, connections whose head is here wait in arrival order (at most
// 1024; more get a 503). So clients that trickle their headers (Slowloris)
// or never send them, or idle keep-alive clients, however many, delay
// /healthz not at all: a liveness probe keeps seeing a healthy daemon, and
// the open connections stay bounded (max_threads + 1024 + 1024 + max_idle).
// Known limits: a client that sends its head but trickles its body holds a
// thread up to request_timeout, and so does one whose head exceeds 4 KiB;
// over TLS the first encrypted byte counts as the head (the handshake runs on
// a thread).
//
// A connection is kept only when its request's end is certain (no
// Transfer-Encoding, one numeric Content-Length whose body was read, no 400,
// 413 or 414), so bytes left unread are never taken for the next request:
// behind a balancer that shares connections among clients, they would be a
// smuggled request (RFC 9112 Sec. 11.2).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "server/protocol/service.hpp"

namespace promptly::server::daemon {

class http_api;

struct metrics_http_options {
  unsigned max_threads = 32;
  std::chrono::milliseconds request_timeout{500};
  std::chrono::milliseconds response_timeout{2000};
  // Keep-alive: how long a connection may wait for its next request without a
  // thread (0: one request per connection), the requests one connection may
  // carry (its last response says "Connection: close"), and the connections
  // that may wait so at once (beyond, a response closes its connection).
  std::chrono::milliseconds idle_timeout{5000};
  unsigned max_requests = 1000;
  unsigned max_idle = 1024;
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
