// The ops of protocol version 1 (docs/server.md, "Ops"): one request ->
// checks of its fields -> the job_server call -> its reply, now (most ops)
// or when a job becomes terminal (wait; submit with "wait":true).
//
// Error code rules: bad_request = the line is not a request (not JSON, not
// an object, a field missing, of the wrong type or unknown, nesting too
// deep, too long); bad_args = a well-formed value the server refuses
// (program arguments against the program's schema, an unknown policy,
// more cores than workers); the job_server's own errors keep their code.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <optional>

#include <promptly/version.hpp>

#include "server/protocol.hpp"
#include "server/protocol_reply.hpp"

namespace promptly::server::protocol {

namespace {

// An error reply to send (thrown inside dispatch, caught once).
struct refusal {
  std::string code;
  std::string message;
};

[[noreturn]] void refuse(error_code c, std::string message) { throw refusal{std::string(to_string(c)), std::move(message)}; }

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

// submit's and submit_periodic's optional "class" and "elastic".
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

bool same_token(std::string_view a, std::string_view b) {
  // Constant time in the contents: a remote client cannot find the token
  // byte by byte from reply timing.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

json program_list(const job_server& srv) {
  json list = json::array();
  for (const auto& p : srv.programs()) list.push_back({{"name", p.name}, {"help", p.help}, {"args", p.schema}});
  return list;
}

}  // namespace

void session::dispatch(std::uint64_t seq, std::string_view line) {
  json req;
  const json* tag = nullptr;
  try {
    if (!nesting_within(line, max_json_depth))
      refuse(error_code::bad_request, "not a request: JSON nested deeper than " + std::to_string(max_json_depth));
    try {
      req = json::parse(line);
    } catch (const json::exception& e) {
      refuse(error_code::bad_request, std::string("not JSON: ") + e.what());
    }
    if (!req.is_object()) refuse(error_code::bad_request, "a request must be a JSON object");
    if (const auto t = req.find("tag"); t != req.end()) tag = &*t;
    const std::string op_name = string_field(req, "op");
    const op o = parse_op(op_name);
    svc_.count_request(o);

    // Authentication (TCP listeners): a "token" on the request, or an
    // earlier successful auth op on this connection.
    if (opts_.token && !authenticated_) {
      const auto t = req.find("token");
      const bool good = t != req.end() && t->is_string() && same_token(t->get_ref<const std::string&>(), *opts_.token);
      if (!good)
        refuse(error_code::not_allowed, t == req.end() ? "this listener needs a token: send {\"op\":\"auth\",\"token\":...} "
                                                         "first or a \"token\" field on each request"
                                                       : "wrong token");
      token_seen_ = true;
      if (o == op::auth) authenticated_ = true;
    } else if (const auto t = req.find("token"); t != req.end() && !t->is_string()) {
      refuse(error_code::bad_request, "field 'token' must be a string");
    }

    job_server& srv = svc_.jobs();
    switch (o) {
      case op::submit: {
        only_fields(req, op_name, {"program", "args", "wait", "class", "elastic", "size_hint"});
        const std::string program = string_field(req, "program");
        const json args = args_of(req);
        const bool wait = bool_field(req, "wait", false);
        const job_handle h = srv.submit(program, args, submit_options_of(req));
        // One callback per accepted job: it feeds the flow-time histogram
        // and, for a waiting submit, completes the reply.
        std::weak_ptr<session> self = weak_from_this();
        auto hist = svc_.histograms();
        std::optional<json> tag_copy;
        if (tag) tag_copy = *tag;
        srv.on_terminal(h.id(), [self, hist, seq, wait, tag_copy = std::move(tag_copy)](const job_info& j) {
          hist->observe(j.program, to_string(j.state), j.timing.flow_us / 1e6);
          if (!wait) return;
          if (auto s = self.lock()) s->complete(seq, job_line(j, tag_copy ? &*tag_copy : nullptr));
        });
        if (!wait) {
          json r{{"id", h.id()}, {"state", to_string(srv.status(h.id()).state)}};
          complete(seq, ok_line(std::move(r), tag));
        }
        return;
      }
      case op::wait: {
        only_fields(req, op_name, {"id"});
        const job_id id = unsigned_field(field(req, "id"), "id");
        std::weak_ptr<session> self = weak_from_this();
        std::optional<json> tag_copy;
        if (tag) tag_copy = *tag;
        srv.on_terminal(id, [self, seq, tag_copy = std::move(tag_copy)](const job_info& j) {
          if (auto s = self.lock()) s->complete(seq, job_line(j, tag_copy ? &*tag_copy : nullptr));
        });
        return;
      }
      case op::status: {
        only_fields(req, op_name, {"id"});
        complete(seq, job_line(srv.status(unsigned_field(field(req, "id"), "id")), tag));
        return;
      }
      case op::cancel: {
        only_fields(req, op_name, {"id"});
        const job_id id = unsigned_field(field(req, "id"), "id");
        const bool cancelled = srv.cancel(id);
        const job_info now = srv.status(id);
        // `cancelled`: the job is or will be cancelled; `state` is now: a
        // running job stays running (cancel_requested) until it stops.
        json r{{"id", id}, {"cancelled", cancelled}, {"state", to_string(now.state)}, {"cancel_requested", now.cancel_requested}};
        complete(seq, ok_line(std::move(r), tag));
        return;
      }
      case op::submit_periodic: {
        only_fields(req, op_name, {"program", "args", "period_ms", "count", "class", "elastic"});
        const std::string program = string_field(req, "program");
        const json& period = field(req, "period_ms");
        if (!period.is_number()) refuse(error_code::bad_request, "field 'period_ms' must be a number");
        periodic_options po;
        po.period = std::chrono::microseconds(std::llround(std::min(period.get<double>(), 1e9) * 1000.0));
        if (const auto c = req.find("count"); c != req.end()) po.count = unsigned_field(*c, "count");
        po.submit = submit_options_of(req);
        const periodic_id id = srv.submit_periodic(program, args_of(req), std::move(po));
        complete(seq, ok_line(to_json(srv.periodic_status(id)), tag));
        return;
      }
      case op::periodic: {
        only_fields(req, op_name, {"id"});
        complete(seq, ok_line(to_json(srv.periodic_status(unsigned_field(field(req, "id"), "id"))), tag));
        return;
      }
      case op::cancel_periodic: {
        only_fields(req, op_name, {"id"});
        const periodic_id id = unsigned_field(field(req, "id"), "id");
        const bool cancelled = srv.cancel_periodic(id);
        json r = to_json(srv.periodic_status(id));
        r["cancelled"] = cancelled;
        complete(seq, ok_line(std::move(r), tag));
        return;
      }
      case op::jobs: {
        only_fields(req, op_name, {});
        json list = json::array();
        for (const auto& j : srv.jobs()) list.push_back(to_json(j));
        complete(seq, ok_line(json{{"jobs", std::move(list)}}, tag));
        return;
      }
      case op::stats: {
        only_fields(req, op_name, {});
        complete(seq, ok_line(to_json(srv.stats()), tag));
        return;
      }
      case op::subscribe: {
        only_fields(req, op_name, {"interval_ms"});
        std::int64_t interval = 1000;
        if (const auto i = req.find("interval_ms"); i != req.end()) {
          if (!i->is_number_integer())
            refuse(error_code::bad_request, "field 'interval_ms' must be an integer");
          interval = i->is_number_unsigned() && i->get<std::uint64_t>() > static_cast<std::uint64_t>(max_interval_ms)
                         ? max_interval_ms + 1
                         : i->get<std::int64_t>();
          if (interval < min_interval_ms || interval > max_interval_ms)
            refuse(error_code::bad_args, "interval_ms must be between " + std::to_string(min_interval_ms) + " and " +
                                             std::to_string(max_interval_ms));
        }
        complete(seq, ok_line(json{{"subscribed", true}, {"interval_ms", interval}}, tag), interval);
        return;
      }
      case op::unsubscribe: {
        only_fields(req, op_name, {});
        complete(seq, ok_line(json{{"subscribed", false}}, tag), -1);
        return;
      }
      case op::set_policy: {
        only_fields(req, op_name, {"policy"});
        const std::string policy = string_field(req, "policy");
        try {
          srv.set_policy(policy);
        } catch (const std::invalid_argument& e) {
          refuse(error_code::bad_args, e.what());
        }
        complete(seq, ok_line(json{{"policy", policy}}, tag));
        return;
      }
      case op::set_cores: {
        only_fields(req, op_name, {"cores"});
        const std::uint64_t n = unsigned_field(field(req, "cores"), "cores");
        if (n > 1'000'000) refuse(error_code::bad_args, "cores must be at most the server's workers");
        try {
          srv.set_cores(static_cast<unsigned>(n));
        } catch (const std::invalid_argument& e) {
          refuse(error_code::bad_args, e.what());
        }
        complete(seq, ok_line(json{{"cores", n}}, tag));
        return;
      }
      case op::programs: {
        only_fields(req, op_name, {});
        complete(seq, ok_line(json{{"programs", program_list(srv)}}, tag));
        return;
      }
      case op::version: {
        only_fields(req, op_name, {});
        complete(seq, ok_line(json{{"protocol", version}, {"server", "promptlyd"}, {"version", PROMPTLY_VERSION},
                                        {"workers", svc_.workers}}, tag));
        return;
      }
      case op::auth: {
        only_fields(req, op_name, {});
        complete(seq, ok_line(json{{"authenticated", true}}, tag));
        return;
      }
      case op::other:
        refuse(error_code::unknown_op, "unknown op '" + clip(op_name) + "'");
    }
  } catch (const refusal& r) {
    svc_.count_error(r.code);
    complete(seq, error_line(r.code, r.message, tag));
  } catch (const error& e) {
    fail(seq, e.code(), e.what(), tag);
  } catch (const std::exception& e) {
    svc_.count_error(internal_error);
    complete(seq, error_line(internal_error, e.what(), tag));
  }
}

}  // namespace promptly::server::protocol
