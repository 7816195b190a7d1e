#include "server/daemon/metrics.hpp"

#include <cstdio>
#include <sstream>

namespace promptly::server::daemon {

namespace {

std::string label_value(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

struct writer {
  std::ostringstream out;
  void head(const char* name, const char* type, const char* help) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  void sample(const std::string& name, const std::string& labels, double v) {
    out << name;
    if (!labels.empty()) out << '{' << labels << '}';
    out << ' ' << num(v) << '\n';
  }
  void one(const char* name, const char* type, const char* help, double v) {
    head(name, type, help);
    sample(name, "", v);
  }
};

// The protocol front doors' counters (requests, errors, connections).
void protocol_metrics(writer& w, protocol::service& svc) {
  w.head("promptly_requests_total", "counter", "Protocol requests by op (other = unknown op).");
  for (std::size_t i = 0; i < protocol::op_count; ++i) {
    const auto o = static_cast<protocol::op>(i);
    w.sample("promptly_requests_total", "op=\"" + std::string(protocol::to_string(o)) + "\"", double(svc.requests(o)));
  }
  w.head("promptly_request_errors_total", "counter", "Error replies by code.");
  for (const auto& [code, n] : svc.errors())
    w.sample("promptly_request_errors_total", "code=\"" + code + "\"", double(n));
  // Statistics only: relaxed loads.
  w.one("promptly_connections", "gauge", "Open protocol connections.",
        double(svc.connections.load(std::memory_order_relaxed)));
  w.one("promptly_connections_total", "counter", "Protocol connections accepted.",
        double(svc.connections_total.load(std::memory_order_relaxed)));
  w.one("promptly_connections_refused_total", "counter", "Connections refused (too many).",
        double(svc.connections_refused.load(std::memory_order_relaxed)));
  w.one("promptly_connections_unauthenticated_total", "counter",
        "Connections closed for showing no token within --auth-timeout.",
        double(svc.connections_timed_out.load(std::memory_order_relaxed)));
  w.one("promptly_connection_buffered_bytes", "gauge",
        "Reply bytes held for protocol connections: held behind a waiting reply, or not yet written.",
        double(svc.buffered_bytes.load(std::memory_order_relaxed)));
  w.one("promptly_connections_reading_paused", "gauge",
        "Connections not read because they reached a bound on pending replies or buffered bytes.",
        double(svc.connections_reading_paused.load(std::memory_order_relaxed)));
}

// The job server's totals and gauges.
void server_metrics(writer& w, const server_stats& s, unsigned workers) {
  w.one("promptly_jobs_submitted_total", "counter", "Jobs accepted (admitted to run or queue).", double(s.submitted));
  w.one("promptly_jobs_done_total", "counter", "Jobs that ended done.", double(s.done));
  w.one("promptly_jobs_failed_total", "counter", "Jobs that ended failed (the program threw).", double(s.failed));
  w.one("promptly_jobs_cancelled_total", "counter", "Jobs that ended cancelled.", double(s.cancelled));
  w.one("promptly_jobs_rejected_total", "counter", "Submissions refused by admission control.", double(s.rejected));
  w.one("promptly_jobs_running", "gauge", "Jobs running now.", double(s.running));
  w.one("promptly_jobs_queued", "gauge", "Jobs accepted and waiting to start (the request buffer).", double(s.queued));
  w.one("promptly_workers", "gauge", "Worker threads of the runtime.", double(workers));
  w.one("promptly_cores_in_use", "gauge", "Workers serving some job's pool now.", double(s.cores_in_use));
  w.one("promptly_core_limit", "gauge", "Occupancy limit set by set_cores (0 = none).", double(s.core_limit));
  w.one("promptly_draining", "gauge", "1 while the server drains (SIGTERM).", s.draining ? 1 : 0);
}

// Per running job: its cores and its pool's work and look time.
void running_job_metrics(writer& w, const server_stats& s) {
  w.head("promptly_job_cores", "gauge", "Cores serving a running job's pool.");
  for (const auto& j : s.jobs)
    w.sample("promptly_job_cores", "job=\"" + std::to_string(j.id) + "\",program=\"" + label_value(j.program) + "\"",
             j.cores);
  w.head("promptly_job_work_seconds", "gauge", "Worker-seconds spent working in a running job's pool.");
  for (const auto& j : s.jobs)
    w.sample("promptly_job_work_seconds",
             "job=\"" + std::to_string(j.id) + "\",program=\"" + label_value(j.program) + "\"", j.work_s);
  w.head("promptly_job_look_seconds", "gauge", "Worker-seconds spent stealing or idle in a running job's pool.");
  for (const auto& j : s.jobs)
    w.sample("promptly_job_look_seconds",
             "job=\"" + std::to_string(j.id) + "\",program=\"" + label_value(j.program) + "\"", j.look_s);
}

// Flow times: the protocol's histograms of every job it submitted, then the
// job server's sliding window.
void flow_time_metrics(writer& w, protocol::service& svc, const server_stats& s) {
  w.head("promptly_flow_time_seconds", "histogram", "Flow time (accepted to terminal) of jobs, by program and state.");
  for (const auto& [key, h] : svc.histograms()->snapshot()) {
    const std::string base = "program=\"" + label_value(key.first) + "\",state=\"" + label_value(key.second) + "\"";
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < protocol::flow_histograms::bounds.size(); ++i) {
      cum += h.buckets[i];
      w.sample("promptly_flow_time_seconds_bucket", base + ",le=\"" + num(protocol::flow_histograms::bounds[i]) + "\"",
               double(cum));
    }
    cum += h.buckets.back();
    w.sample("promptly_flow_time_seconds_bucket", base + ",le=\"+Inf\"", double(cum));
    w.sample("promptly_flow_time_seconds_sum", base, h.sum_s);
    w.sample("promptly_flow_time_seconds_count", base, double(h.count));
  }

  w.head("promptly_flow_time_window_seconds", "gauge",
         "Flow time over the sliding window of recent done jobs (stat = mean, p50, p99), all programs and per program.");
  w.sample("promptly_flow_time_window_seconds", "program=\"\",stat=\"mean\"", s.flow_mean_us / 1e6);
  w.sample("promptly_flow_time_window_seconds", "program=\"\",stat=\"p50\"", s.flow_p50_us / 1e6);
  w.sample("promptly_flow_time_window_seconds", "program=\"\",stat=\"p99\"", s.flow_p99_us / 1e6);
  for (const auto& p : s.programs) {
    const std::string l = "program=\"" + label_value(p.program) + "\",stat=";
    w.sample("promptly_flow_time_window_seconds", l + "\"mean\"", p.flow_mean_us / 1e6);
    w.sample("promptly_flow_time_window_seconds", l + "\"p50\"", p.flow_p50_us / 1e6);
    w.sample("promptly_flow_time_window_seconds", l + "\"p99\"", p.flow_p99_us / 1e6);
  }
}

// The server's own overheads over the window (AMCilk Sec. 5.1).
void overhead_metrics(writer& w, const server_stats& s) {
  w.head("promptly_job_overhead_seconds", "gauge",
         "Server overheads over the window (AMCilk Sec. 5.1): op = start (start decision to root task running), "
         "setup (start decision to root task submitted: start without the wait for a core), remove (pool "
         "removal) or end (root task returned to job terminal, remove included); stat = mean, p50, p99, max.");
  for (const auto& [op, l] : {std::pair{"start", &s.start}, std::pair{"setup", &s.setup}, std::pair{"remove", &s.remove},
                              std::pair{"end", &s.end}}) {
    const std::string base = std::string("op=\"") + op + "\",stat=";
    w.sample("promptly_job_overhead_seconds", base + "\"mean\"", l->mean_us / 1e6);
    w.sample("promptly_job_overhead_seconds", base + "\"p50\"", l->p50_us / 1e6);
    w.sample("promptly_job_overhead_seconds", base + "\"p99\"", l->p99_us / 1e6);
    w.sample("promptly_job_overhead_seconds", base + "\"max\"", l->max_us / 1e6);
  }
}

}  // namespace

std::string render_metrics(protocol::service& svc, unsigned workers) {
  const server_stats s = svc.jobs().stats();  // one snapshot for the whole scrape
  writer w;
  server_metrics(w, s, workers);
  running_job_metrics(w, s);
  flow_time_metrics(w, svc, s);
  overhead_metrics(w, s);
  protocol_metrics(w, svc);
  return w.out.str();
}

readiness check_ready(protocol::service& svc) {
  job_server& srv = svc.jobs();
  if (!srv.accepting()) return {false, "draining"};
  if (!srv.ready()) return {false, "admission would reject: running and queued jobs at their limits"};
  return {true, "ready"};
}

}  // namespace promptly::server::daemon
