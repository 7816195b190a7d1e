// email_driver: runs the clients of driver.hpp against an email server, prints a
// human summary on stderr and, last on stdout, the benchmark protocol's RESULT line
// (bench/README.md). It either starts the server itself (--server, then stops it with SIGTERM
// and requires a clean exit) or talks to a running one (--connect host:port).
//
//   email_driver --server PATH|cmake:TARGET|go:PKG [--policy P] [--workers N] [--clients 6]
//                [--measure-ms 4000] [--warmup-ms 500] [--msg-bytes 8192] [--seed 1]
//                [--rate R (open loop: R requests/s over all clients; default 0, closed loop)]
//                [--samples-out FILE.json] [--warmup W --reps R]
//
// --warmup W / --reps R (the harness's in-process repetitions) scale the warm-up and measured
// windows: W x warmup-ms, then R x measure-ms. RESULT's "result" is the number of clients (the
// same for every server); the driver exits 1 if any check failed or the server did not stop
// cleanly, so a wrong answer fails the benchmark pair.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "driver.hpp"
#include "latency_summary.hpp"
#include "server_process.hpp"

namespace fs = std::filesystem;

namespace {

void write_samples(const std::string& path, const email::driver_report& r) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(path);
  auto list = [&](const char* name, const std::vector<double>& v, bool last) {
    // Fixed, to 0.1 us (as the RESULT line): the default precision wrote 386546.5 as 386546, and
    // the plots then found the file's p99 was not the round's.
    f << "\"" << name << "\": [" << std::fixed << std::setprecision(1);
    for (std::size_t i = 0; i < v.size(); ++i) f << (i ? "," : "") << v[i];
    f << "]" << (last ? "" : ", ");
  };
  f << "{";
  list("resp", r.resp_us, false);
  list("send", r.send_us, false);
  list("sort", r.sort_us, false);
  list("print", r.print_us, true);
  f << "}\n";
}

}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  const std::string server_spec = a.get_string("server", "");
  const std::string connect = a.get_string("connect", "");
  const std::string policy = a.get_string("policy", "");
  const long workers = a.get_long("workers", 0);
  email::driver_options o;
  o.clients = static_cast<std::size_t>(a.get_long("clients", 6));
  const long warmup_ms = a.get_long("warmup-ms", 500), measure_ms = a.get_long("measure-ms", 4000);
  const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 1);
  o.message_bytes = static_cast<std::size_t>(a.get_long("msg-bytes", 8192));
  o.seed = static_cast<std::uint64_t>(a.get_long("seed", 1));
  o.requests_per_client = static_cast<std::size_t>(a.get_long("requests", 0));
  const long rate = a.get_long("rate", 0);
  if (rate < 0) bench::args::fail("--rate must be a number of requests per second >= 0 (0: closed loop)");
  o.rate_per_s = static_cast<double>(rate);
  const std::string samples_out = a.get_string("samples-out", "");
  a.finish();
  if (server_spec.empty() == connect.empty()) bench::args::fail("give exactly one of --server and --connect");
  if (reps < 1 || warmup < 0 || warmup_ms < 0 || measure_ms <= 0) bench::args::fail("bad --reps/--warmup/--*-ms");
  o.warmup = std::chrono::milliseconds(warmup * warmup_ms);
  o.measure = std::chrono::milliseconds(reps * measure_ms);

  apps::child srv;
  if (!server_spec.empty()) {
    std::vector<std::string> args{"--port", "0"};
    if (workers > 0) args.insert(args.end(), {"--workers", std::to_string(workers)});
    if (!policy.empty()) args.insert(args.end(), {"--policy", policy});
    srv = apps::start_server(apps::resolve_server(server_spec), args);
    o.port = srv.port;
  } else {
    auto colon = connect.rfind(':');
    if (colon == std::string::npos) bench::args::fail("--connect needs host:port");
    o.host = connect.substr(0, colon);
    o.port = static_cast<std::uint16_t>(std::stoi(connect.substr(colon + 1)));
  }

  email::driver_report r;
  try {
    r = email::run_driver(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "email_driver: %s\n", e.what());
    if (srv.pid > 0) apps::stop_server(srv.pid);
    return 1;
  }
  std::string stop_problem = srv.pid > 0 ? apps::stop_server(srv.pid) : "";

  const auto resp = email::summarize(r.resp_us), send = email::summarize(r.send_us),
             sort = email::summarize(r.sort_us), print = email::summarize(r.print_us);
  std::fprintf(stderr, "email_driver: %zu clients, %.2f s measured, %llu requests answered (%.0f/s)\n", o.clients,
               r.measured_s, static_cast<unsigned long long>(r.completed), r.completed / r.measured_s);
  for (auto [name, s] : {std::pair{"resp", resp}, {"send", send}, {"sort", sort}, {"print", print}})
    std::fprintf(stderr, "  %-6s n %6zu  mean %9.1f us  p50 %9.1f  p95 %9.1f  p99 %9.1f  max %9.1f\n", name, s.count,
                 s.mean, s.p50, s.p95, s.p99, s.max);
  const auto lag = email::summarize(r.issue_lag_us);
  const auto resp_w = email::summarize(r.resp_from_write_us), send_w = email::summarize(r.send_from_write_us);
  if (o.rate_per_s > 0)
    std::fprintf(stderr, "  open loop at %.0f requests/s: %llu refused as busy; written after due: p50 %.1f us, p99 %.1f, max %.1f\n",
                 o.rate_per_s, static_cast<unsigned long long>(r.refused), lag.p50, lag.p99, lag.max);
  std::fprintf(stderr, "  server: %s\n", r.server_stats.c_str());
  if (!samples_out.empty()) write_samples(samples_out, r);

  bool ok = true;
  for (const auto& f : r.failures) std::fprintf(stderr, "email_driver: check failed: %s\n", f.c_str());
  if (r.failure_count > 0) {
    std::fprintf(stderr, "email_driver: %llu checks failed\n", static_cast<unsigned long long>(r.failure_count));
    ok = false;
  }
  if (r.issued != r.answered) {
    std::fprintf(stderr, "email_driver: %llu requests sent, %llu answered\n", static_cast<unsigned long long>(r.issued),
                 static_cast<unsigned long long>(r.answered));
    ok = false;
  }
  if (!stop_problem.empty()) {
    std::fprintf(stderr, "email_driver: %s\n", stop_problem.c_str());
    ok = false;
  }
  if (resp.count == 0 || send.count == 0 || sort.count == 0 || print.count == 0) {
    std::fprintf(stderr, "email_driver: a request type got no measured sample\n");
    ok = false;
  }
  if (!ok) return 1;

  std::printf("RESULT {\"result\": %zu, \"metrics\": {\"region_s\": %.9g", o.clients, send.p99 / 1e6);
  for (auto [name, s] : {std::pair{"resp", resp}, {"send", send}, {"sort", sort}, {"print", print}})
    std::printf(", \"%s_us_mean\": %.1f, \"%s_us_p50\": %.1f, \"%s_us_p95\": %.1f, \"%s_us_p99\": %.1f", name, s.mean,
                name, s.p50, name, s.p95, name, s.p99);
  for (const char* k : {"compress_us_mean", "compress_us_p50", "compress_us_p95", "compress_us_p99"})
    std::printf(", \"%s\": %.1f", k, apps::json_number(r.server_stats, k));
  std::printf(", \"missed_periods\": %.0f, \"periods\": %.0f, \"compress_tasks\": %.0f, \"throughput_per_s\": %.1f, "
              "\"requests\": %llu, \"offered_per_s\": %.0f, \"refused\": %llu, \"issue_lag_us_p99\": %.1f, "
              "\"resp_from_write_us_p99\": %.1f, \"send_from_write_us_p99\": %.1f}}\n",
              apps::json_number(r.server_stats, "missed_periods"), apps::json_number(r.server_stats, "periods"),
              apps::json_number(r.server_stats, "compress_tasks"), r.completed / r.measured_s,
              static_cast<unsigned long long>(r.completed), o.rate_per_s, static_cast<unsigned long long>(r.refused),
              lag.p99, resp_w.p99, send_w.p99);
  return 0;
}
