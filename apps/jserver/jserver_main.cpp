// jserver: the job server as a program (README.md). Runs one measured window and prints a
// summary on stderr and the benchmark protocol's RESULT line on stdout (bench/README.md).
//
//   jserver [--policy aps|prompt|fair|oblivious] [--workers N] [--load 70] [--duration-ms 4000]
//           [--seed 1] [--fair-weights 10,40,25,15,10,0] [--warmup W --reps R]
//
// --load is the offered utilisation in percent of the workers. --reps R makes the window
// R x duration-ms (the harness's repetitions); --warmup W runs W untimed windows of 1 s first.
// "result" is "ok" when every job computed the right answer (else the program exits 1).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "bench_common.hpp"
#include "jserver.hpp"
#include "priorities.hpp"

namespace {
struct summary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
summary summarize(std::vector<double> v) {
  summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(std::ceil(q * v.size())) - 1)]; };
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  s.p50 = rank(0.5), s.p90 = rank(0.9), s.p95 = rank(0.95), s.p99 = rank(0.99), s.max = v.back();
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  promptly::runtime_config cfg;
  cfg.levels = jserver::order::size;
  cfg.policy = a.get_string("policy", "aps");
  if (long w = a.get_long("workers", 0); w > 0) cfg.workers = static_cast<unsigned>(w);
  // fair: a criterion that favours the short, urgent job types (the generators need little).
  std::string weights = a.get_string("fair-weights", "10,40,25,15,10,0");
  for (std::size_t pos = 0; pos <= weights.size();) {
    auto comma = weights.find(',', pos);
    if (comma == std::string::npos) comma = weights.size();
    cfg.fair.weights.push_back(std::stoll(weights.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  jserver::jserver_options o;
  o.load = static_cast<double>(a.get_long("load", 70)) / 100.0;
  const long duration_ms = a.get_long("duration-ms", 4000);
  o.seed = static_cast<std::uint64_t>(a.get_long("seed", 1));
  const long warmup = a.get_long("warmup", 0), reps = a.get_long("reps", 1);
  a.finish();
  if (reps < 1 || warmup < 0 || duration_ms <= 0 || o.load <= 0) bench::args::fail("bad --reps/--warmup/--duration-ms/--load");

  try {
    promptly::runtime rt{cfg};
    for (long w = 0; w < warmup; ++w) {
      auto wo = o;
      wo.duration = std::chrono::milliseconds(1000);
      (void)jserver::run_jserver(rt, wo);
    }
    o.duration = std::chrono::milliseconds(duration_ms * reps);
    const auto r = jserver::run_jserver(rt, o);
    std::fprintf(stderr, "jserver: policy %s, %u workers, offered load %.0f%%, %.2f s\n", cfg.policy.c_str(),
                 rt.config().workers, r.offered_load * 100, r.elapsed_s);
    std::size_t jobs = 0;
    std::string metrics;
    char buf[512];
    double mm_mean_s = 0;
    for (std::size_t t = 0; t < 4; ++t) {
      const auto& tr = r.types[t];
      const auto s = summarize(tr.latency_us);
      jobs += tr.latency_us.size();
      const char* n = jserver::type_names[t];
      std::fprintf(stderr, "  %-4s work %8.0f us  rate %6.2f/s  jobs %4zu  mean %9.0f us  p50 %9.0f  p90 %9.0f  p95 %9.0f  p99 %9.0f  max %9.0f\n",
                   n, tr.work_us, tr.rate_per_s, tr.latency_us.size(), s.mean, s.p50, s.p90, s.p95, s.p99, s.max);
      std::snprintf(buf, sizeof buf,
                    ", \"%s_us_mean\": %.1f, \"%s_us_p50\": %.1f, \"%s_us_p90\": %.1f, \"%s_us_p95\": %.1f, "
                    "\"%s_us_p99\": %.1f, \"%s_us_max\": %.1f, \"%s_throughput_per_s\": %.3f, \"%s_work_us\": %.1f",
                    n, s.mean, n, s.p50, n, s.p90, n, s.p95, n, s.p99, n, s.max, n,
                    static_cast<double>(tr.latency_us.size()) / r.elapsed_s, n, tr.work_us);
      metrics += buf;
      if (t == 0) mm_mean_s = s.mean / 1e6;
    }
    if (r.wrong_answers > 0) {
      std::fprintf(stderr, "jserver: %llu jobs computed a wrong answer\n", static_cast<unsigned long long>(r.wrong_answers));
      return 1;
    }
    std::printf("RESULT {\"result\": \"ok\", \"metrics\": {\"region_s\": %.9g%s, \"throughput_per_s\": %.3f, "
                "\"offered_load\": %.3f, \"jobs\": %zu}}\n",
                mm_mean_s, metrics.c_str(), static_cast<double>(jobs) / r.elapsed_s, r.offered_load, jobs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jserver: %s\n", e.what());
    return 1;
  }
  return 0;
}
