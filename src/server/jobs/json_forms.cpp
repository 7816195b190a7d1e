// The protocol's names and JSON forms of the job server's types
// (docs/server.md). Field names here are protocol: extend, never rename.
#include "promptly/server/job_server.hpp"

namespace promptly::server {

std::string_view to_string(error_code c) noexcept {
  switch (c) {
    case error_code::bad_request: return "bad_request";
    case error_code::unknown_op: return "unknown_op";
    case error_code::unknown_program: return "unknown_program";
    case error_code::bad_args: return "bad_args";
    case error_code::unknown_job: return "unknown_job";
    case error_code::rejected: return "rejected";
    case error_code::not_allowed: return "not_allowed";
  }
  return "unknown";
}

std::string_view to_string(job_state s) noexcept {
  switch (s) {
    case job_state::queued: return "queued";
    case job_state::running: return "running";
    case job_state::done: return "done";
    case job_state::failed: return "failed";
    case job_state::cancelled: return "cancelled";
    case job_state::rejected: return "rejected";
  }
  return "unknown";
}

json to_json(const job_info& j) {
  json o;
  o["id"] = j.id;
  o["program"] = j.program;
  if (!j.job_class.empty()) o["class"] = j.job_class;
  o["state"] = std::string(to_string(j.state));
  if (j.state == job_state::done) o["result"] = j.result;
  if (!j.error.empty()) o["error"] = j.error;
  o["timing"] = {{"queued_us", j.timing.queued_us},
                 {"run_us", j.timing.run_us},
                 {"flow_us", j.timing.flow_us},
                 {"start_us", j.timing.start_us},
                 {"setup_us", j.timing.setup_us},
                 {"remove_us", j.timing.remove_us},
                 {"end_us", j.timing.end_us}};
  if (j.pool) o["pool"] = *j.pool;
  if (j.cancel_requested) o["cancel_requested"] = true;
  if (j.state == job_state::running) {
    o["cores"] = j.cores;
    o["work_s"] = j.work_s;
    o["look_s"] = j.look_s;
  }
  return o;
}

namespace {

json to_json(const latency_summary& l) {
  return {{"samples", l.samples}, {"mean_us", l.mean_us}, {"p50_us", l.p50_us}, {"p99_us", l.p99_us}, {"max_us", l.max_us}};
}

}  // namespace

json to_json(const server_stats& s) {
  json o;
  o["submitted"] = s.submitted;
  o["rejected"] = s.rejected;
  o["done"] = s.done;
  o["failed"] = s.failed;
  o["cancelled"] = s.cancelled;
  o["running"] = s.running;
  o["queued"] = s.queued;
  o["cores_in_use"] = s.cores_in_use;
  o["core_limit"] = s.core_limit;
  o["draining"] = s.draining;
  o["flow"] = {{"mean_us", s.flow_mean_us}, {"p50_us", s.flow_p50_us}, {"p99_us", s.flow_p99_us}};
  o["overheads"] = {{"start", to_json(s.start)}, {"setup", to_json(s.setup)}, {"remove", to_json(s.remove)},
                    {"end", to_json(s.end)}};
  json programs = json::array();
  for (const auto& p : s.programs)
    programs.push_back({{"program", p.program},
                        {"done", p.done},
                        {"failed", p.failed},
                        {"cancelled", p.cancelled},
                        {"flow", {{"mean_us", p.flow_mean_us}, {"p50_us", p.flow_p50_us}, {"p99_us", p.flow_p99_us}}}});
  o["programs"] = std::move(programs);
  json jobs = json::array();
  for (const auto& j : s.jobs) jobs.push_back(to_json(j));
  o["jobs"] = std::move(jobs);
  o["size_estimates"] = s.size_estimates;
  if (!s.periodic.empty()) {
    json periodic = json::array();
    for (const auto& p : s.periodic) periodic.push_back(to_json(p));
    o["periodic"] = std::move(periodic);
  }
  return o;
}

}  // namespace promptly::server
