// proxy_driver: starts the origin server (in this process) and the proxy (--server, a child
// process, stopped with SIGTERM at the end and required to exit 0), runs the closed-loop
// clients of driver.hpp, and prints a summary on stderr and the RESULT line of the benchmark
// protocol (bench/README.md) on stdout. "result" is the number of requests answered; the driver
// exits 1 if any check failed.
//
//   proxy_driver --server PATH|cmake:TARGET [--policy P] [--workers N] [--clients 8]
//                [--requests 500] [--seed 1] [--samples-out FILE.json] [--warmup W --reps R]
//
// --reps R multiplies the requests per client; --warmup W runs W rounds of 100 requests per
// client first (they fill the cache and are not measured). --samples-out writes every measured
// latency as {"resp": [us...], "first_byte": [...], "hit": [...], "miss": [...]} (the email
// driver's format), from
// which bench/apps/plot_cdf.py draws the latency CDFs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <stdexcept>
#include <string>

#include "bench_common.hpp"
#include "driver.hpp"
#include "origin.hpp"
#include "server_process.hpp"

namespace {
struct summary {
  double mean = 0, p50 = 0, p99 = 0;
};
summary summarize(std::vector<double> v) {
  summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  s.p50 = v[std::min(v.size() - 1, static_cast<std::size_t>(std::ceil(0.5 * v.size())) - 1)];
  s.p99 = v[std::min(v.size() - 1, static_cast<std::size_t>(std::ceil(0.99 * v.size())) - 1)];
  return s;
}

// Latencies to 0.1 us, like the RESULT line: the CDF needs no more and the file stays small.
void write_list(std::ostream& f, const char* name, const std::vector<double>& v) {
  f << '"' << name << "\": [" << std::fixed << std::setprecision(1);
  for (std::size_t i = 0; i < v.size(); ++i) f << (i ? "," : "") << v[i];
  f << ']';
}

void write_samples(const std::string& path, const proxy::driver_report& r) {
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  std::ofstream f(path);
  f << '{';
  write_list(f, "resp", r.resp_us);
  f << ", ";
  write_list(f, "first_byte", r.first_byte_us);
  f << ", ";
  write_list(f, "hit", r.hit_us);
  f << ", ";
  write_list(f, "miss", r.miss_us);
  f << "}\n";
  if (!f.flush()) throw std::runtime_error("cannot write the samples to " + path);
}
}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  const std::string server = a.get_string("server", "");
  const std::string policy = a.get_string("policy", "");
  const long workers = a.get_long("workers", 0);
  proxy::driver_options o;
  o.clients = static_cast<std::size_t>(a.get_long("clients", 8));
  const long requests = a.get_long("requests", 500);
  o.seed = static_cast<std::uint64_t>(a.get_long("seed", 1));
  const long warmup = a.get_long("warmup", 0), reps = a.get_long("reps", 1);
  const std::string samples_out = a.get_string("samples-out", "");
  a.finish();
  if (server.empty()) bench::args::fail("--server is required");
  if (o.clients < 1 || requests < 1 || reps < 1 || warmup < 0) bench::args::fail("bad --clients/--requests/--reps/--warmup");

  proxy::origin_server origin;
  std::vector<std::string> args{"--port", "0"};
  if (workers > 0) args.insert(args.end(), {"--workers", std::to_string(workers)});
  if (!policy.empty()) args.insert(args.end(), {"--policy", policy});
  const apps::child child = apps::start_server(apps::resolve_server(server), args);
  o.proxy_port = child.port;
  o.origin_port = origin.port();

  bool ok = true;
  auto check = [&](const proxy::driver_report& r) {
    for (const auto& f : r.failures) std::fprintf(stderr, "proxy_driver: check failed: %s\n", f.c_str());
    if (r.failure_count > 0 || r.answered != r.issued) ok = false;
  };
  for (long w = 0; w < warmup; ++w) {
    auto wo = o;
    wo.requests = 100;
    wo.seed = o.seed + 1000 + static_cast<std::uint64_t>(w);
    check(proxy::run_driver(wo));
  }
  o.requests = static_cast<std::size_t>(requests * reps);
  const auto r = proxy::run_driver(o);
  check(r);
  const std::string stop_problem = apps::stop_server(child.pid);
  if (!stop_problem.empty()) {
    std::fprintf(stderr, "proxy_driver: %s\n", stop_problem.c_str());
    ok = false;
  }
  const auto resp = summarize(r.resp_us), first_byte = summarize(r.first_byte_us), hit = summarize(r.hit_us), miss = summarize(r.miss_us),
             hit_b = summarize(r.hit_ns_per_byte), miss_b = summarize(r.miss_ns_per_byte);
  std::fprintf(stderr, "proxy_driver: %zu clients x %zu requests in %.2f s (%.0f/s), %zu hits, %zu misses, origin served %llu\n",
               o.clients, o.requests, r.elapsed_s, r.answered / r.elapsed_s, r.hit_us.size(), r.miss_us.size(),
               static_cast<unsigned long long>(origin.served()));
  for (auto [n, s] : {std::pair{"resp", resp}, {"first_byte", first_byte}, {"hit", hit}, {"miss", miss}})
    std::fprintf(stderr, "  %-10s mean %8.1f us  p50 %8.1f  p99 %8.1f\n", n, s.mean, s.p50, s.p99);
  std::fprintf(stderr, "  proxy: %s\n", r.proxy_stats.c_str());
  if (!samples_out.empty()) {
    try {
      write_samples(samples_out, r);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "proxy_driver: %s\n", e.what());
      ok = false;
    }
  }
  if (!ok || hit.mean == 0 || miss.mean == 0) {
    std::fprintf(stderr, "proxy_driver: failed (checks, unanswered requests, unclean stop, or no hit/miss sample)\n");
    return 1;
  }
  std::printf("RESULT {\"result\": %llu, \"metrics\": {\"region_s\": %.9g", static_cast<unsigned long long>(r.answered),
              hit.p99 / 1e6);
  for (auto [n, s] : {std::pair{"resp", resp}, {"first_byte", first_byte}, {"hit", hit}, {"miss", miss}})
    std::printf(", \"%s_us_mean\": %.1f, \"%s_us_p50\": %.1f, \"%s_us_p99\": %.1f", n, s.mean, n, s.p50, n, s.p99);
  std::printf(", \"hit_ns_per_byte_p50\": %.2f, \"miss_ns_per_byte_p50\": %.2f", hit_b.p50, miss_b.p50);
  for (const char* k : {"stats_us_mean", "stats_us_p50", "stats_us_p99", "cached_pages", "evictions"})
    std::printf(", \"%s\": %.1f", k, apps::json_number(r.proxy_stats, k));
  std::printf(", \"hit_ratio\": %.4f, \"throughput_per_s\": %.1f}}\n",
              static_cast<double>(r.hit_us.size()) / static_cast<double>(r.answered), r.answered / r.elapsed_s);
  return 0;
}
