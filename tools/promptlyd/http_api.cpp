#include "http_api.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <memory>

#include <httplib.h>

#include "server/protocol/protocol.hpp"
#include "server/protocol/ops.hpp"
#include "server/protocol/reply.hpp"

namespace promptly::server::daemon {

using protocol::op;
using protocol::op_reply;

int http_status(std::string_view code) {
  if (code == "bad_request" || code == "unknown_op") return 400;
  if (code == "bad_args" || code == "unknown_program") return 422;
  if (code == "unknown_job") return 404;
  if (code == "rejected") return 503;
  if (code == "not_allowed") return 403;
  return 500;
}

namespace {

// The jobs op lists live jobs only.
constexpr std::array<std::string_view, 2> live_states{"queued", "running"};

void send_error(httplib::Response& res, std::string_view code, std::string_view message) {
  res.status = http_status(code);
  // Admission and draining are the node's state, not the request's fault:
  // another node (or this one, shortly) may take it.
  if (res.status == 503) res.set_header("Retry-After", "1");
  res.set_content(protocol::error_line(code, message, nullptr) + "\n", "application/json");
}

void send(httplib::Response& res, op_reply r, int ok_status = 200) {
  if (!r.ok) return send_error(res, r.code, r.message);
  res.status = ok_status;
  res.set_content(protocol::ok_line(std::move(r.result), nullptr) + "\n", "application/json");
}

// Runs an op and blocks until its answer (now, or when its job is terminal).
op_reply run_blocking(protocol::service& svc, op o, const json& req) {
  struct answer {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<op_reply> r;
  };
  auto a = std::make_shared<answer>();
  svc.count_request(o);
  protocol::run_op(svc, o, protocol::to_string(o), req, [a](op_reply r) {
    std::lock_guard lock(a->mu);
    a->r = std::move(r);
    a->cv.notify_all();
  });
  std::unique_lock lock(a->mu);
  a->cv.wait(lock, [&] { return a->r.has_value(); });
  return std::move(*a->r);
}

// The request body as a JSON object, or a refusal (bad_request).
json body_object(const httplib::Request& req) {
  if (req.body.empty()) return json::object();
  if (!protocol::nesting_within(req.body, protocol::max_json_depth))
    protocol::refuse(error_code::bad_request,
                     "not a request: JSON nested deeper than " + std::to_string(protocol::max_json_depth));
  json j;
  try {
    j = json::parse(req.body);
  } catch (const json::exception& e) {
    protocol::refuse(error_code::bad_request, std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) protocol::refuse(error_code::bad_request, "the body must be a JSON object");
  for (const char* k : {"op", "token"})
    if (j.contains(k))
      protocol::refuse(error_code::bad_request, std::string("field '") + k + "' does not belong in the body: the route says it");
  return j;
}

}  // namespace

// One of the max_blocking places for a request that holds its thread.
struct http_api::blocking_slot {
  std::atomic<unsigned>* count = nullptr;
  explicit blocking_slot(std::atomic<unsigned>& c, unsigned limit) {
    if (c.fetch_add(1) < limit) count = &c;
    else c.fetch_sub(1);
  }
  ~blocking_slot() {
    if (count) count->fetch_sub(1);
  }
  blocking_slot(const blocking_slot&) = delete;
  blocking_slot& operator=(const blocking_slot&) = delete;
  [[nodiscard]] bool held() const { return count != nullptr; }
};

http_api::http_api(protocol::service& svc, http_api_options opts) : svc_(svc), opts_(std::move(opts)) {}

bool http_api::valid_node_id(const std::string& id) {
  return !id.empty() && id.size() <= 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string http_api::id_text(std::uint64_t id) const {
  return opts_.node_id.empty() ? std::to_string(id) : opts_.node_id + "-" + std::to_string(id);
}

std::optional<std::uint64_t> http_api::id_of(const std::string& text) const {
  std::string_view digits = text;
  if (!opts_.node_id.empty()) {
    if (digits.size() <= opts_.node_id.size() + 1 || digits.substr(0, opts_.node_id.size()) != opts_.node_id ||
        digits[opts_.node_id.size()] != '-')
      return std::nullopt;
    digits.remove_prefix(opts_.node_id.size() + 1);
  }
  if (digits.empty() || digits.size() > 19 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoull(std::string(digits));
}

void http_api::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

bool http_api::authorized(const httplib::Request& req, httplib::Response& res) {
  const std::string auth = req.get_header_value("Authorization");
  constexpr std::string_view scheme = "Bearer ";
  if (auth.size() > scheme.size() && std::string_view(auth).substr(0, scheme.size()) == scheme &&
      protocol::same_token(std::string_view(auth).substr(scheme.size()), opts_.token))
    return true;
  svc_.count_error("not_allowed");
  send_error(res, "not_allowed", auth.empty() ? "this API needs 'Authorization: Bearer <token>'" : "wrong token");
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer");
  return false;
}

op_reply http_api::with_ids(op_reply r) const {
  if (r.ok && r.result.contains("id")) r.result["id"] = id_text(r.result["id"].get<std::uint64_t>());
  return r;
}

json http_api::job_id_of(const httplib::Request& req) const {
  const std::string text = req.matches[1];
  const auto id = id_of(text);
  if (!id) {
    protocol::refuse(error_code::unknown_job,
                     "no job '" + protocol::clip(text) + "' on this node" +
                         (opts_.node_id.empty() ? std::string() : " (its ids are " + opts_.node_id + "-N)"));
  }
  return json{{"id", *id}};
}

void http_api::submit(const httplib::Request& req, httplib::Response& res) {
  json body = body_object(req);
  const bool wait = body.contains("wait") && body["wait"] == true;
  std::optional<blocking_slot> slot;
  if (wait) {
    slot.emplace(blocking_, opts_.max_blocking);
    if (!slot->held()) protocol::refuse(error_code::rejected, "too many waiting requests on this node");
  }
  op_reply r = with_ids(run_blocking(svc_, op::submit, body));
  if (r.ok) res.set_header("Location", "/v1/jobs/" + r.result.value("id", ""));
  send(res, std::move(r), wait ? 200 : 202);
}

void http_api::job(const httplib::Request& req, httplib::Response& res) {
  const json id = job_id_of(req);
  const std::string w = req.get_param_value("wait");
  if (w.empty() || w == "0" || w == "false") return send(res, with_ids(run_blocking(svc_, op::status, id)));
  blocking_slot slot(blocking_, opts_.max_blocking);
  if (!slot.held()) protocol::refuse(error_code::rejected, "too many waiting requests on this node");
  send(res, with_ids(run_blocking(svc_, op::wait, id)));
}

void http_api::cancel(const httplib::Request& req, httplib::Response& res) {
  send(res, with_ids(run_blocking(svc_, op::cancel, job_id_of(req))));
}

void http_api::list(const httplib::Request& req, httplib::Response& res) {
  const std::string state = req.get_param_value("state");
  if (!state.empty() && std::find(live_states.begin(), live_states.end(), state) == live_states.end())
    protocol::refuse(error_code::bad_request, "state '" + protocol::clip(state) +
                                                  "' cannot be listed: the live jobs are queued or running");
  op_reply r = run_blocking(svc_, op::jobs, json::object());
  if (r.ok) {
    json kept = json::array();
    for (auto& j : r.result["jobs"]) {
      if (!state.empty() && j.value("state", "") != state) continue;
      j["id"] = id_text(j["id"].get<std::uint64_t>());
      kept.push_back(std::move(j));
    }
    r.result["jobs"] = std::move(kept);
  }
  send(res, std::move(r));
}

void http_api::events(const httplib::Request& req, httplib::Response& res) {
  json sub = json::object();
  if (req.has_param("interval_ms")) {
    const std::string v = req.get_param_value("interval_ms");
    if (v.empty() || v.size() > 10 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
      protocol::refuse(error_code::bad_request, "interval_ms must be a non-negative integer");
    sub["interval_ms"] = std::stoll(v);
  }
  op_reply r = run_blocking(svc_, op::subscribe, sub);
  if (!r.ok) return send(res, std::move(r));
  // The slot is the stream's for as long as httplib keeps the provider.
  auto slot = std::make_shared<blocking_slot>(blocking_, opts_.max_blocking);
  if (!slot->held()) protocol::refuse(error_code::rejected, "too many waiting requests on this node");
  const auto interval = std::chrono::milliseconds(r.subscribe_ms);
  auto seq = std::make_shared<std::uint64_t>(0);
  res.set_header("Cache-Control", "no-store");
  res.set_chunked_content_provider("text/event-stream", [this, slot, seq, interval](std::size_t, httplib::DataSink& sink) {
    const std::string event =
        "event: stats\ndata: " + protocol::stream_line(svc_.jobs().stats(), (*seq)++, interval.count()) + "\n\n";
    if (!sink.write(event.data(), event.size())) return false;
    std::unique_lock lock(mu_);
    stopped_cv_.wait_for(lock, interval, [this] { return stopped_; });
    if (stopped_) sink.done();
    return true;
  });
}

void http_api::install(httplib::Server& s) {
  s.set_payload_max_length(opts_.max_body_bytes);
  // The token guards every /v1 route; probes and metrics stay open.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool pass = req.path.rfind("/v1/", 0) != 0 || authorized(req, res);
    return pass ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
  });
  // A refusal thrown by a route becomes its error reply.
  using route = void (http_api::*)(const httplib::Request&, httplib::Response&);
  auto bind = [this](route r) {
    return [this, r](const httplib::Request& req, httplib::Response& res) {
      try {
        (this->*r)(req, res);
      } catch (const protocol::refusal& e) {
        svc_.count_error(e.code);
        send_error(res, e.code, e.message);
      }
    };
  };
  s.Post("/v1/jobs", bind(&http_api::submit));
  s.Get(R"(/v1/jobs/([^/]+))", bind(&http_api::job));
  s.Delete(R"(/v1/jobs/([^/]+))", bind(&http_api::cancel));
  s.Get("/v1/jobs", bind(&http_api::list));
  s.Get("/v1/stats", [this](const httplib::Request&, httplib::Response& res) {
    send(res, run_blocking(svc_, op::stats, json::object()));
  });
  s.Get("/v1/events", bind(&http_api::events));
}

}  // namespace promptly::server::daemon
