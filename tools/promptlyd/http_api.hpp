// promptlyd's HTTP/JSON API, version 1 (docs/server.md, "HTTP API"): the
// line protocol's ops (src/server/protocol/ops.hpp) behind REST routes,
// with the same checks and error codes, mapped to the status codes HTTP
// clients and load balancers act on (503 + Retry-After: try another node).
//
// Routes: POST /v1/jobs (submit), GET /v1/jobs/{id} (status; ?wait=1: wait),
// DELETE /v1/jobs/{id} (cancel), GET /v1/jobs?state= (jobs), GET /v1/stats,
// GET /v1/events (server-sent events of stats, the subscribe op). Every
// /v1 route needs "Authorization: Bearer <token>" (401 otherwise).
//
// Job ids: with a node id, "<node>-<n>", so a balancer can route a status
// or cancel to the node that owns the job by the id's prefix.
//
// Invariants:
// * A request blocks its HTTP thread only while it waits for a job (wait,
//   submit with "wait":true) or streams events, and at most max_blocking of
//   those run at once (more get 503): the threads beyond stay free for
//   probes (/healthz, /readyz) and short requests.
// * stop() ends every event stream within one wake-up; waiting requests
//   end when their job is terminal (the daemon drains the jobs first).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "server/protocol/ops.hpp"
#include "server/protocol/service.hpp"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace promptly::server::daemon {

struct http_api_options {
  std::string token;  // the bearer token every /v1 request must show
  std::string node_id;
  std::size_t max_body_bytes = std::size_t{1} << 20;
  unsigned max_blocking = 28;
};

class http_api {
 public:
  http_api(protocol::service& svc, http_api_options opts);
  http_api(const http_api&) = delete;
  http_api& operator=(const http_api&) = delete;

  // Adds the /v1 routes and the token check to s (before it listens).
  void install(httplib::Server& s);
  // Ends the event streams (before the server stops).
  void stop();

  // A node id may name a HAProxy server and prefix an id: [A-Za-z0-9_]{1,32}.
  [[nodiscard]] static bool valid_node_id(const std::string& id);
  // The id as HTTP clients see it, and back (nullopt: not this node's or not an id).
  [[nodiscard]] std::string id_text(std::uint64_t id) const;
  [[nodiscard]] std::optional<std::uint64_t> id_of(const std::string& text) const;

  struct blocking_slot;

 private:
  // The routes (install() binds them), one per request kind.
  void submit(const httplib::Request& req, httplib::Response& res);
  void job(const httplib::Request& req, httplib::Response& res);
  void cancel(const httplib::Request& req, httplib::Response& res);
  void list(const httplib::Request& req, httplib::Response& res);
  void events(const httplib::Request& req, httplib::Response& res);
  // Whether the request shows the token (else the 401 is in res).
  bool authorized(const httplib::Request& req, httplib::Response& res);
  // The route's {"id": N} from the path's ID (a refusal if not this node's).
  json job_id_of(const httplib::Request& req) const;
  // The reply with this node's ids in place of the numbers.
  protocol::op_reply with_ids(protocol::op_reply r) const;

  protocol::service& svc_;
  const http_api_options opts_;
  std::atomic<unsigned> blocking_{0};
  std::mutex mu_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;  // guarded by mu_
};

// HTTP status of a protocol error code (docs/server.md, "HTTP API").
[[nodiscard]] int http_status(std::string_view code);

}  // namespace promptly::server::daemon
