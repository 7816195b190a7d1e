// Suite `jobs`, bench `elastic` (AMCilk Sec. 6.2, scaled to 2 cores): two periodic parallel fib
// tasks on the embedded job server; every instance is a job submitted at its release with its
// elastic declaration (work C, span L, period T_min = T_max = the task's period now, E = 1) and
// its deadline is the next release (implicit deadlines).
//   task 1: fib(n), nominal period P1, reduced to a third for 1-10 consecutive instances at
//           --changes random points (seed --seed) of its --iterations instances;
//   task 2: fib(n - 1), period P2, as many instances as fit in task 1's run.
// --n (35); C is measured at start (the fastest serial run of a 400 ms window, reported as work1_ms), L is
// declared as C / 20 (fib with a cutoff of 20 has far more parallelism; a larger L would only
// make the elastic policy more cautious).
// The design: with the reduced period task 1 needs both cores (T(1) = C > P1 / 3 > T(2)), so an
// equal split misses whenever task 2 runs at the same time, and the elastic policy gives task 1
// its cores and task 2 the gaps. So the periods are set from the measured C1, like the Bing
// traces' arrival rates from each program's measured work unit: P1 = 1.875 C1 (its third,
// 0.625 C1, lies between T(2) = 0.525 C1 and T(1) = C1) and P2 = 2.083 C1 (the paper's 50 ms
// against the 24 ms serial fib(35) took where the bench was first run with fixed periods of 45
// and 50 ms). With fixed periods the bench stopped separating the policies on faster hosts:
// there serial fib(35) took 13.4 ms, task 1 fitted on one core and every policy tied at no
// misses (bench/results/jobs/README.md). Choosing n from the measured time instead was tried:
// runs then differ in n, so runtimes no longer run the same work. --period1-ms / --period2-ms
// (both, or neither) fix the periods in ms instead.
// Metrics: miss_rate (both tasks), miss_rate_1, miss_rate_2, resp_ms_p99_1 / _2 (release -> end),
// period1_ms / period2_ms (the periods used); region_s = task 1's mean response time.
// --instances-csv FILE writes every instance of the last repetition (task, release, period,
// response, missed) for a closer look.
#include <algorithm>
#include <cstdio>
#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "jobs_common.hpp"
#include "promptly/fork_join.hpp"
#include "promptly/runtime.hpp"
#include "promptly/server/job_server.hpp"

namespace {

constexpr int fib_cutoff = 20;

long fib_par(int n) {
  if (n < fib_cutoff) return bench::fib_serial(n);
  auto [a, b] = promptly::join([&] { return fib_par(n - 1); }, [&] { return fib_par(n - 2); });
  return a + b;
}

// The fastest serial run in a window of at least 5 runs and 400 ms: this VM's host sometimes
// runs a thread 1.6x slower for 100 ms or more, and a calibration taken then (fastest of 5 runs,
// ~70 ms) stretched every period of that run by as much (work1_ms 21-23 ms instead of 13.2 in 3 of
// 15 runs of the suite).
double serial_ms(int n) {
  double best = 1e300;
  const std::int64_t until = jobs::now_ns() + 400'000'000;
  for (int r = 0; r < 5 || jobs::now_ns() < until; ++r) {
    const std::int64_t t0 = jobs::now_ns();
    long v = bench::fib_serial(n);
    bench::opaque(v);
    best = std::min(best, static_cast<double>(jobs::now_ns() - t0) / 1e6);
  }
  return best;
}

struct instance {
  int task = 0;
  std::int64_t release_ns = 0;  // relative to the start
  double period_ms = 0;
};

}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  const std::string policy = a.get_string("policy", "elastic");
  const long iterations = a.get_long("iterations", 100);
  const long changes = a.get_long("changes", 5);
  const long period1_fixed_ms = a.get_long("period1-ms", 0);
  const long period2_fixed_ms = a.get_long("period2-ms", 0);
  const int n = static_cast<int>(a.get_long("n", 35));
  const long seed = a.get_long("seed", 7);
  const auto workers = static_cast<unsigned>(a.get_long("workers", 2));
  const long warmup = a.get_long("warmup", 0);
  const long reps = a.get_long("reps", 1);
  const std::string instances_csv = a.get_string("instances-csv", "");
  a.finish();
  if (iterations < 1 || changes < 0 || period1_fixed_ms < 0 || period2_fixed_ms < 0 || n < 22 || n > 45 || workers == 0)
    bench::args::fail("--iterations, --workers must be >= 1, --period1-ms, --period2-ms >= 0 (0: scaled), --changes >= 0, "
                      "--n 22..45");
  if ((period1_fixed_ms == 0) != (period2_fixed_ms == 0))
    bench::args::fail("--period1-ms and --period2-ms go together: give both, or neither (both scaled)");

  const double c1 = serial_ms(n), c2 = serial_ms(n - 1);
  // The plan is made in units (C1, or 1 ms for fixed periods), so the number of instances, and so
  // the answer the harness compares between runtimes, does not depend on the measured time.
  const bool scaled = period1_fixed_ms == 0;
  const double unit_ms = scaled ? c1 : 1.0;
  const double period1_units = scaled ? 1.875 : static_cast<double>(period1_fixed_ms);
  const double period2_units = scaled ? 50.0 / 24.0 : static_cast<double>(period2_fixed_ms);

  // Task 1's periods: nominal, a third at `changes` random points for 1-10 instances.
  std::vector<double> period1(static_cast<std::size_t>(iterations), period1_units);
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
  for (long k = 0; k < changes; ++k) {
    const auto at = static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(iterations));
    const auto len = static_cast<std::size_t>(1 + rng() % 10);
    for (std::size_t i = at; i < std::min(period1.size(), at + len); ++i) period1[i] = period1_units / 3.0;
  }
  std::vector<instance> plan;
  auto at_ns = [&](double units) { return static_cast<std::int64_t>(units * unit_ms * 1e6); };
  double t = 0;
  for (double p : period1) {
    plan.push_back({1, at_ns(t), p * unit_ms});
    t += p;
  }
  for (double r = 0; r + period2_units <= t; r += period2_units) plan.push_back({2, at_ns(r), period2_units * unit_ms});
  std::stable_sort(plan.begin(), plan.end(), [](const instance& x, const instance& y) { return x.release_ns < y.release_ns; });

  promptly::runtime_config cfg;
  cfg.workers = workers;
  cfg.policy = policy;
  promptly::runtime rt(cfg);
  promptly::server::job_server srv(rt);
  srv.register_program(
      "fib", [](promptly::server::job_context& ctx) -> promptly::server::json {
        const long v = fib_par(ctx.args()["n"].get<int>());
        return {{"fib", v}, {"end_ns", jobs::now_ns()}};
      },
      promptly::server::arg_schema{}.integer("n", {.min = 0, .max = 45}));

  struct task_stats {
    std::size_t misses = 0, count = 0;
    std::vector<double> resp_ms;
  };
  task_stats last[3];
  auto [answer, stats] = bench::measure(warmup, reps, [&] {
    std::vector<std::pair<instance, promptly::server::job_handle>> running;
    running.reserve(plan.size());
    const std::int64_t t0 = jobs::now_ns() + 5'000'000;
    for (const instance& in : plan) {
      jobs::sleep_until_ns(t0 + in.release_ns);
      const double c = in.task == 1 ? c1 : c2;
      promptly::server::submit_options o;
      o.elastic = promptly::elastic_params{.work_ms = c, .span_ms = c / 20, .period_min_ms = in.period_ms,
                                           .period_max_ms = in.period_ms, .elasticity = 1};
      running.emplace_back(in, srv.submit("fib", {{"n", in.task == 1 ? n : n - 1}}, o));
    }
    long sum = 0;
    for (auto& ts : last) ts = {};
    std::FILE* csv = instances_csv.empty() ? nullptr : std::fopen(instances_csv.c_str(), "w");
    if (!instances_csv.empty() && csv == nullptr) bench::args::fail("--instances-csv: cannot write " + instances_csv);
    if (csv != nullptr) std::fprintf(csv, "task,release_ms,period_ms,resp_ms,missed\n");
    for (auto& [in, h] : running) {
      const auto info = h.wait();
      if (info.state != promptly::server::job_state::done) bench::args::fail("an instance did not finish: " + info.error);
      sum += info.result["fib"].get<long>();
      const double resp = static_cast<double>(info.result["end_ns"].get<std::int64_t>() - (t0 + in.release_ns)) / 1e6;
      task_stats& ts = last[in.task];
      ++ts.count;
      ts.resp_ms.push_back(resp);
      if (resp > in.period_ms) ++ts.misses;
      if (csv != nullptr)
        std::fprintf(csv, "%d,%.3f,%.3f,%.3f,%d\n", in.task, static_cast<double>(in.release_ns) / 1e6, in.period_ms, resp,
                     resp > in.period_ms ? 1 : 0);
    }
    if (csv != nullptr) std::fclose(csv);
    return sum;
  });
  // A short run (--iterations 1) may release no task-2 instance: its p99 then reads 0.
  auto p99 = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return jobs::percentile(v, 0.99);
  };
  double mean1 = 0;
  for (double r : last[1].resp_ms) mean1 += r;
  mean1 /= static_cast<double>(last[1].resp_ms.size());
  stats.region_s = stats.region_s_min = mean1 / 1e3;
  const auto rate = [](const task_stats& s) { return s.count ? static_cast<double>(s.misses) / static_cast<double>(s.count) : 0.0; };
  bench::print_result(std::to_string(answer), stats,
                      {{"miss_rate", static_cast<double>(last[1].misses + last[2].misses) /
                                         static_cast<double>(last[1].count + last[2].count)},
                       {"miss_rate_1", rate(last[1])}, {"miss_rate_2", rate(last[2])},
                       {"resp_ms_p99_1", p99(last[1].resp_ms)}, {"resp_ms_p99_2", p99(last[2].resp_ms)},
                       {"work1_ms", c1}, {"work2_ms", c2}, {"period1_ms", period1_units * unit_ms},
                       {"period2_ms", period2_units * unit_ms},
                       {"fib_n", static_cast<double>(n)},
                       {"instances", static_cast<double>(plan.size())}});
  return 0;
}
