// The ops of protocol version 1 (docs/server.md, "Ops"), one function each
// (ops.hpp): one request -> checks of its fields -> the job_server
// call -> its reply, now (most ops) or when a job becomes terminal (wait;
// submit with "wait":true).
//
// Error code rules: bad_request = the line is not a request (not JSON, not
// an object, a field missing, of the wrong type or unknown, nesting too
// deep, too long); bad_args = a well-formed value the server refuses
// (program arguments against the program's schema, an unknown policy,
// more cores than workers); the job_server's own errors keep their code.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <optional>

#include <promptly/version.hpp>

#include "server/protocol/ops.hpp"
#include "server/protocol/protocol.hpp"
#include "server/protocol/reply.hpp"

namespace promptly::server::protocol {

void refuse(error_code c, std::string message) { throw refusal{std::string(to_string(c)), std::move(message)}; }

namespace {

// Fields every request may carry besides its op's own.
bool common_field(const std::string& k) { return k == "op" || k == "tag" || k == "token"; }

void only_fields(const json& req, std::string_view op_name, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : req.items()) {
    if (common_field(k)) continue;
    bool ok = false;
    for (const auto a : allowed) ok = ok || a == k;
    if (!ok) refuse(error_code::bad_request, "unknown field '" + clip(k) + "' for op " + std::string(op_name));
  }
}

const json& field(const json& req, const char* name) {
  const auto it = req.find(name);
  if (it == req.end()) refuse(error_code::bad_request, std::string("missing field '") + name + "'");
  return *it;
}

std::string string_field(const json& req, const char* name) {
  const json& v = field(req, name);
  if (!v.is_string()) refuse(error_code::bad_request, std::string("field '") + name + "' must be a string");
  return v.get<std::string>();
}

std::uint64_t unsigned_field(const json& v, const char* name) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    refuse(error_code::bad_request, std::string("field '") + name + "' must be a non-negative integer, not " +
                                        std::to_string(v.get<std::int64_t>()));
  }
  refuse(error_code::bad_request, std::string("field '") + name + "' must be a non-negative integer");
}

bool bool_field(const json& req, const char* name, bool fallback) {
  const auto it = req.find(name);
  if (it == req.end()) return fallback;
  if (!it->is_boolean()) refuse(error_code::bad_request, std::string("field '") + name + "' must be true or false");
  return it->get<bool>();
}

// submit's "elastic": {"work_ms", "span_ms", "period_min_ms", "period_max_ms", "elasticity"}, all
// numbers, elasticity optional (1); the constraints between them are job_server::submit's check.
promptly::elastic_params elastic_field(const json& v) {
  if (!v.is_object()) refuse(error_code::bad_request, "field 'elastic' must be an object");
  for (const auto& item : v.items()) {
    const std::string& k = item.key();
    if (k != "work_ms" && k != "span_ms" && k != "period_min_ms" && k != "period_max_ms" && k != "elasticity")
      refuse(error_code::bad_request, "unknown field '" + clip(k) + "' in 'elastic'");
  }
  auto number = [&](const char* name, std::optional<double> fallback) {
    const auto it = v.find(name);
    if (it == v.end()) {
      if (!fallback) refuse(error_code::bad_request, std::string("field 'elastic' needs '") + name + "'");
      return *fallback;
    }
    if (!it->is_number()) refuse(error_code::bad_request, std::string("field 'elastic.") + name + "' must be a number");
    return it->get<double>();
  };
  promptly::elastic_params e;
  e.work_ms = number("work_ms", std::nullopt);
  e.span_ms = number("span_ms", std::nullopt);
  e.period_min_ms = number("period_min_ms", std::nullopt);
  e.period_max_ms = number("period_max_ms", std::nullopt);
  e.elasticity = number("elasticity", 1.0);
  return e;
}

// submit's and submit_periodic's optional "class", "elastic" and "size_hint".
submit_options submit_options_of(const json& req) {
  submit_options so;
  if (const auto c = req.find("class"); c != req.end()) {
    if (!c->is_string()) refuse(error_code::bad_request, "field 'class' must be a string");
    so.job_class = c->get<std::string>();
  }
  if (const auto e = req.find("elastic"); e != req.end()) so.elastic = elastic_field(*e);
  if (const auto h = req.find("size_hint"); h != req.end()) {
    if (!h->is_number()) refuse(error_code::bad_args, "field 'size_hint' must be a number of milliseconds");
    so.size_hint_ms = h->get<double>();  // its range is job_server::submit's check
  }
  return so;
}

// The "args" object of submit and submit_periodic (default {}).
json args_of(const json& req) {
  const auto a = req.find("args");
  if (a == req.end()) return json::object();
  if (!a->is_object()) refuse(error_code::bad_request, "field 'args' must be an object");
  return *a;
}

json program_list(const job_server& srv) {
  json list = json::array();
  for (const auto& p : srv.programs()) list.push_back({{"name", p.name}, {"help", p.help}, {"args", p.schema}});
  return list;
}


// One op's call: its request and where its answer goes.
struct op_call {
  service& svc;
  job_server& srv;
  const json& req;
  std::string_view name;
  reply_fn& done;

  void ok(json result) { done(op_reply{true, std::move(result), {}, {}, 0}); }
  void fields(std::initializer_list<std::string_view> allowed) { only_fields(req, name, allowed); }
  [[nodiscard]] std::uint64_t id() const { return unsigned_field(field(req, "id"), "id"); }
};

op_reply job_reply(const job_info& j) { return op_reply{true, to_json(j), {}, {}, 0}; }

void op_submit(op_call& c) {
  c.fields({"program", "args", "wait", "class", "elastic", "size_hint"});
  const std::string program = string_field(c.req, "program");
  const json args = args_of(c.req);
  const bool wait = bool_field(c.req, "wait", false);
  const job_handle h = c.srv.submit(program, args, submit_options_of(c.req));
  // One callback per accepted job: it feeds the flow-time histogram and,
  // for a waiting submit, answers.
  auto hist = c.svc.histograms();
  reply_fn later = wait ? c.done : reply_fn{};
  c.srv.on_terminal(h.id(), [hist, later = std::move(later)](const job_info& j) {
    hist->observe(j.program, to_string(j.state), j.timing.flow_us / 1e6);
    if (later) later(job_reply(j));
  });
  if (!wait) c.ok(json{{"id", h.id()}, {"state", to_string(c.srv.status(h.id()).state)}});
}

void op_wait(op_call& c) {
  c.fields({"id"});
  c.srv.on_terminal(c.id(), [later = c.done](const job_info& j) { later(job_reply(j)); });
}

void op_status(op_call& c) {
  c.fields({"id"});
  c.ok(to_json(c.srv.status(c.id())));
}

void op_cancel(op_call& c) {
  c.fields({"id"});
  const job_id id = c.id();
  const bool cancelled = c.srv.cancel(id);
  const job_info now = c.srv.status(id);
  // `cancelled`: the job is or will be cancelled; `state` is now: a running
  // job stays running (cancel_requested) until it stops.
  c.ok(json{{"id", id}, {"cancelled", cancelled}, {"state", to_string(now.state)}, {"cancel_requested", now.cancel_requested}});
}

void op_submit_periodic(op_call& c) {
  c.fields({"program", "args", "period_ms", "count", "class", "elastic"});
  const std::string program = string_field(c.req, "program");
  const json& period = field(c.req, "period_ms");
  if (!period.is_number()) refuse(error_code::bad_request, "field 'period_ms' must be a number");
  periodic_options po;
  po.period = std::chrono::microseconds(std::llround(std::min(period.get<double>(), 1e9) * 1000.0));
  if (const auto n = c.req.find("count"); n != c.req.end()) po.count = unsigned_field(*n, "count");
  po.submit = submit_options_of(c.req);
  const periodic_id id = c.srv.submit_periodic(program, args_of(c.req), std::move(po));
  c.ok(to_json(c.srv.periodic_status(id)));
}

void op_periodic(op_call& c) {
  c.fields({"id"});
  c.ok(to_json(c.srv.periodic_status(c.id())));
}

void op_cancel_periodic(op_call& c) {
  c.fields({"id"});
  const periodic_id id = c.id();
  const bool cancelled = c.srv.cancel_periodic(id);
  json r = to_json(c.srv.periodic_status(id));
  r["cancelled"] = cancelled;
  c.ok(std::move(r));
}

void op_jobs(op_call& c) {
  c.fields({});
  json list = json::array();
  for (const auto& j : c.srv.jobs()) list.push_back(to_json(j));
  c.ok(json{{"jobs", std::move(list)}});
}

void op_stats(op_call& c) {
  c.fields({});
  c.ok(to_json(c.srv.stats()));
}

void op_subscribe(op_call& c) {
  c.fields({"interval_ms"});
  std::int64_t interval = 1000;
  if (const auto i = c.req.find("interval_ms"); i != c.req.end()) {
    if (!i->is_number_integer()) refuse(error_code::bad_request, "field 'interval_ms' must be an integer");
    interval = i->is_number_unsigned() && i->get<std::uint64_t>() > static_cast<std::uint64_t>(max_interval_ms)
                   ? max_interval_ms + 1
                   : i->get<std::int64_t>();
    if (interval < min_interval_ms || interval > max_interval_ms)
      refuse(error_code::bad_args, "interval_ms must be between " + std::to_string(min_interval_ms) + " and " +
                                       std::to_string(max_interval_ms));
  }
  c.done(op_reply{true, json{{"subscribed", true}, {"interval_ms", interval}}, {}, {}, interval});
}

void op_unsubscribe(op_call& c) {
  c.fields({});
  c.done(op_reply{true, json{{"subscribed", false}}, {}, {}, -1});
}

void op_set_policy(op_call& c) {
  c.fields({"policy"});
  const std::string policy = string_field(c.req, "policy");
  try {
    c.srv.set_policy(policy);
  } catch (const std::invalid_argument& e) {
    refuse(error_code::bad_args, e.what());
  }
  c.ok(json{{"policy", policy}});
}

void op_set_cores(op_call& c) {
  c.fields({"cores"});
  const std::uint64_t n = unsigned_field(field(c.req, "cores"), "cores");
  if (n > 1'000'000) refuse(error_code::bad_args, "cores must be at most the server's workers");
  try {
    c.srv.set_cores(static_cast<unsigned>(n));
  } catch (const std::invalid_argument& e) {
    refuse(error_code::bad_args, e.what());
  }
  c.ok(json{{"cores", n}});
}

void op_programs(op_call& c) {
  c.fields({});
  c.ok(json{{"programs", program_list(c.srv)}});
}

void op_version(op_call& c) {
  c.fields({});
  c.ok(json{{"protocol", version}, {"server", "promptlyd"}, {"version", PROMPTLY_VERSION}, {"workers", c.svc.workers}});
}

// Authentication itself is the connection's business (session::dispatch):
// reaching the op means the token was right.
void op_auth(op_call& c) {
  c.fields({});
  c.ok(json{{"authenticated", true}});
}

void op_unknown(op_call& c) { refuse(error_code::unknown_op, "unknown op '" + clip(c.name) + "'"); }

// Indexed by op (service.hpp's order).
using op_handler = void (*)(op_call&);
constexpr std::array<op_handler, op_count> op_handlers{
    op_submit, op_wait,     op_status,   op_cancel,   op_jobs, op_stats,           op_subscribe, op_unsubscribe,
    op_set_policy, op_set_cores, op_programs, op_version, op_auth, op_submit_periodic, op_periodic, op_cancel_periodic,
    op_unknown};

op_reply error_reply(std::string code, std::string message) {
  return op_reply{false, json(), std::move(code), std::move(message), 0};
}

}  // namespace

// Nesting depth outside strings, so a 1 MiB line of '[' is refused before
// the parser builds a million nested values.
bool nesting_within(std::string_view s, unsigned limit) {
  unsigned depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

bool same_token(std::string_view a, std::string_view b) {
  // Constant time in the contents: a remote client cannot find the token
  // byte by byte from reply timing.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}


void run_op(service& svc, op o, std::string_view op_name, const json& req, reply_fn done) {
  op_reply failure;
  try {
    op_call c{svc, svc.jobs(), req, op_name, done};
    op_handlers[static_cast<std::size_t>(o)](c);
    return;
  } catch (const refusal& r) {
    failure = error_reply(r.code, r.message);
  } catch (const error& e) {
    failure = error_reply(std::string(to_string(e.code())), e.what());
  } catch (const std::exception& e) {
    failure = error_reply(std::string(internal_error), e.what());
  }
  svc.count_error(failure.code);
  done(std::move(failure));
}

}  // namespace promptly::server::protocol
