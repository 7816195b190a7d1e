// The `jobs` suite's shared driver (bench/README.md, "Suite jobs"): reads a job trace
// (bench/jobs/make_trace.py), measures the work unit's cost on this machine, replays the trace
// open-loop at a load rho (job i released at its intended time whatever happened before: no
// coordinated omission), and turns the jobs' end times into flow-time statistics. A runtime's
// program supplies only `run_trace`: start each job when `replay` hands it over, run it as that
// runtime's user would, and record the job's end time and checksum.
//
// Flow time = the job's end (CLOCK_MONOTONIC, comparable across processes) - its intended
// arrival. The answer printed is the wrapping sum of every job's checksum: equal across
// runtimes only if each ran every unit of every job exactly once.
//
// Modes (one per bench):
//   --rho R --jobs N            replay the first N jobs of the trace at load R
//   --sweep R1,R2,... --jobs N  replay them at each load in turn until one is not sustained;
//                               reports max_rate_per_s and max_rho (criterion: sustained())
//   --calibrate 1               only measure the unit's cost and report it (unit_ns)
// --unit-ns X (> 0) takes X as the unit's cost instead of measuring it. The arrival schedule is
// set from that cost, so a runtime whose measurement came out 5% high would replay the trace at
// 5% less load (measured: 451-601 ns across the runs of one suite run, so the nominal 90% load
// was 86-95%); the suite measures once and hands the same cost to every program of one
// language (bench/suites/jobs.py, "calibrate").
// A fixed job count (not a fixed duration) keeps the answer the same for every runtime,
// whatever each one measured as its unit cost.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "server/programs/bing_unit.hpp"

namespace jobs {

using promptly::server::programs::bing_piece;

struct job {
  double t = 0;             // arrival in mean-job-work units (make_trace.py)
  std::uint64_t units = 0;  // work units
  std::uint64_t seed = 0;   // the job's unit values
};

struct trace {
  std::string workload;
  double mean_units = 0;
  std::uint64_t piece_units = 0;
  std::vector<job> jobs;
};

inline trace read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) bench::args::fail("cannot read trace '" + path + "'");
  trace tr;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      std::istringstream words(line);
      for (std::string w; words >> w;) {
        if (w.rfind("workload=", 0) == 0) tr.workload = w.substr(9);
        if (w.rfind("mean_units=", 0) == 0) tr.mean_units = std::stod(w.substr(11));
        if (w.rfind("piece_units=", 0) == 0) tr.piece_units = std::stoull(w.substr(12));
      }
      continue;
    }
    job j;
    std::istringstream f(line);
    if (!(f >> j.t >> j.units >> j.seed)) bench::args::fail("trace '" + path + "': bad line '" + line + "'");
    tr.jobs.push_back(j);
  }
  if (tr.jobs.empty() || tr.mean_units <= 0 || tr.piece_units == 0)
    bench::args::fail("trace '" + path + "' has no jobs or no mean_units/piece_units header");
  return tr;
}

inline std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

inline void sleep_until_ns(std::int64_t t) {
  timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

// The serial cost of one unit here, in ns: the fastest of 7 runs of 20,000 units (the fastest,
// because a shared VM only ever slows a run down).
inline double calibrate_unit_ns() {
  double best = 1e300;
  std::uint64_t sink = 0;
  for (int r = 0; r < 7; ++r) {
    const std::int64_t t0 = now_ns();
    sink += bing_piece(0, 20'000, static_cast<std::uint64_t>(r));
    best = std::min(best, static_cast<double>(now_ns() - t0) / 20'000.0);
  }
  bench::opaque(sink);
  return best;
}

// What a runtime's program gets for one replay.
struct plan {
  const trace* tr = nullptr;
  std::size_t count = 0;                  // jobs 0..count-1 of the trace are released
  std::vector<std::int64_t> arrival_ns;   // intended arrival of job i, relative to the start
  unsigned workers = 0;
  double unit_ns = 0;                     // the measured cost of one unit (a job's work: units * unit_ns)
};

// What it gives back: each job's end (absolute CLOCK_MONOTONIC ns) and the checksum sum.
struct outcome {
  std::vector<std::int64_t> end_ns;
  std::uint64_t checksum = 0;
  // Optional per-job time the runtime spent before the job's body started (process start for
  // the process-per-job peer): reported as flow_excl_start metrics when not empty.
  std::vector<std::int64_t> start_overhead_ns;
  // Optional runtime-specific metrics of this replay (Promptly: start/remove/decision latency).
  std::vector<std::pair<std::string, double>> extra_metrics;
};

// How late each job of the last replay was handed to the runtime (release(i) returned) after its
// intended arrival: the releasing thread's wake-up and the runtime's submit path. Flow time counts
// from the intended arrival, so this lateness is part of every job's flow.
inline std::vector<std::int64_t>& release_late_ns() {
  static std::vector<std::int64_t> late;
  return late;
}

// Releases job i at t0 + arrival_ns[i] by calling release(i); returns t0. The releasing thread
// sleeps to each arrival (absolute deadlines, so a late release does not delay the next).
inline std::int64_t replay(const plan& p, const std::function<void(std::size_t)>& release) {
  std::vector<std::int64_t>& late = release_late_ns();
  late.assign(p.count, 0);
  const std::int64_t t0 = now_ns() + 2'000'000;  // 2 ms from now: the first arrival is on time
  for (std::size_t i = 0; i < p.count; ++i) {
    const std::int64_t due = t0 + p.arrival_ns[i];
    if (now_ns() < due) sleep_until_ns(due);
    release(i);
    late[i] = now_ns() - due;
  }
  return t0;
}

using run_trace_fn = std::function<outcome(const plan&, std::int64_t& t0)>;

struct flow_stats {
  double mean_ms = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
};

inline double percentile(std::vector<double>& sorted, double q) {
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(sorted.size() - 1, k)];
}

inline flow_stats summarise(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  flow_stats s;
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean_ms = sum / static_cast<double>(ms.size());
  s.p50_ms = percentile(ms, 0.50);
  s.p99_ms = percentile(ms, 0.99);
  s.max_ms = ms.back();
  return s;
}

struct replay_result {
  flow_stats flow, flow_excl_start;
  bool has_excl = false;
  std::vector<std::pair<std::string, double>> extra_metrics;
  std::uint64_t checksum = 0;
  std::size_t jobs = 0;
  double lambda_per_s = 0;
};

inline plan make_plan(const trace& tr, double rho, std::size_t count, unsigned workers, double unit_ns) {
  plan p;
  p.tr = &tr;
  p.workers = workers;
  p.unit_ns = unit_ns;
  // Job i arrives at t_i * E[work] / (rho * P): utilisation rho = lambda * E[work] / P.
  const double scale_ns = tr.mean_units * unit_ns / (rho * workers);
  if (count == 0 || count > tr.jobs.size())
    bench::args::fail("--jobs must be 1.." + std::to_string(tr.jobs.size()) + " (the trace's length)");
  for (std::size_t i = 0; i < count; ++i) p.arrival_ns.push_back(static_cast<std::int64_t>(tr.jobs[i].t * scale_ns));
  p.count = count;
  return p;
}

inline replay_result replay_once(const trace& tr, double rho, std::size_t count, unsigned workers, double unit_ns,
                                 const run_trace_fn& run) {
  const plan p = make_plan(tr, rho, count, workers, unit_ns);
  std::int64_t t0 = 0;
  outcome o = run(p, t0);
  if (o.end_ns.size() != p.count) bench::args::fail("the runtime reported the wrong number of jobs");
  std::vector<double> flow(p.count), excl;
  for (std::size_t i = 0; i < p.count; ++i) {
    if (o.end_ns[i] == 0) bench::args::fail("job " + std::to_string(i) + " never finished");
    flow[i] = static_cast<double>(o.end_ns[i] - (t0 + p.arrival_ns[i])) / 1e6;
    if (!o.start_overhead_ns.empty())
      excl.push_back(flow[i] - static_cast<double>(o.start_overhead_ns[i]) / 1e6);
  }
  replay_result r;
  r.flow = summarise(flow);
  if (!excl.empty()) {
    r.flow_excl_start = summarise(excl);
    r.has_excl = true;
  }
  r.checksum = o.checksum;
  r.extra_metrics = std::move(o.extra_metrics);
  if (const auto& late = release_late_ns(); late.size() == p.count) {
    std::vector<double> late_ms(late.begin(), late.end());
    for (double& v : late_ms) v /= 1e6;
    const flow_stats l = summarise(std::move(late_ms));
    r.extra_metrics.emplace_back("release_late_us_mean", l.mean_ms * 1e3);
    r.extra_metrics.emplace_back("release_late_us_p99", l.p99_ms * 1e3);
  }
  r.jobs = p.count;
  r.lambda_per_s = rho * workers * 1e9 / (tr.mean_units * unit_ns);
  return r;
}

// A load is sustained when the mean flow time stays within 20 x the mean job's work spread over
// the P workers (E[work] / P): beyond that the queue, not the job, is what a client waits for.
inline bool sustained(const replay_result& r, const trace& tr, unsigned workers, double unit_ns) {
  const double bound_ms = 20.0 * tr.mean_units * unit_ns / workers / 1e6;
  return r.flow.mean_ms <= bound_ms;
}

inline std::vector<double> parse_list(const std::string& s) {
  std::vector<double> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const double x = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || x <= 0) bench::args::fail("--sweep needs loads > 0, like 0.5,0.7,0.9");
    v.push_back(x);
  }
  if (v.empty()) bench::args::fail("--sweep is empty");
  return v;
}

// A workload program's main: parses the suite's options, replays, prints the RESULT line.
// `extra_options` lets a runtime read its own options (like --policy) before finish().
inline int main(int argc, char** argv, const std::function<void(bench::args&)>& extra_options,
                const std::function<run_trace_fn(unsigned workers)>& make_runner) {
  bench::args a(argc, argv);
  const std::string trace_path = a.get_string("trace", "");
  const double rho = std::strtod(a.get_string("rho", "0.75").c_str(), nullptr);
  const std::string sweep = a.get_string("sweep", "");
  const long count = a.get_long("jobs", 1000);
  const auto workers = static_cast<unsigned>(a.get_long("workers", 2));
  const long warmup = a.get_long("warmup", 0);
  const long reps = a.get_long("reps", 1);
  const double given_unit_ns = std::strtod(a.get_string("unit-ns", "0").c_str(), nullptr);
  const bool calibrate_only = a.get_long("calibrate", 0) != 0;
  // Every job's units (and the trace's mean) times this: larger jobs at proportionally fewer
  // arrivals, the same load. A diagnostic: a per-job cost that does not grow with the job weighs
  // less in each flow time.
  const double size_scale = std::strtod(a.get_string("size-scale", "1").c_str(), nullptr);
  extra_options(a);
  a.finish();
  if (!(size_scale > 0) || !std::isfinite(size_scale) || size_scale > 1000)
    bench::args::fail("--size-scale must be a number in (0, 1000]");
  if (!(given_unit_ns >= 0) || !std::isfinite(given_unit_ns))
    bench::args::fail("--unit-ns must be a finite number of ns >= 0 (0: measure it)");
  if (calibrate_only) {
    const double unit_ns = calibrate_unit_ns();
    bench::print_result("\"0\"", bench::region_stats{unit_ns / 1e9, unit_ns / 1e9, 0.0}, {{"unit_ns", unit_ns}});
    return 0;
  }
  if (trace_path.empty()) bench::args::fail("--trace FILE is required (bench/jobs/traces/)");
  if (!(rho > 0) || count <= 0 || workers == 0) bench::args::fail("--rho, --jobs and --workers must be > 0");
  trace tr = read_trace(trace_path);
  if (size_scale != 1) {
    for (job& j : tr.jobs) j.units = static_cast<std::uint64_t>(std::llround(static_cast<double>(j.units) * size_scale));
    tr.mean_units *= size_scale;
  }
  const double unit_ns = given_unit_ns > 0 ? given_unit_ns : calibrate_unit_ns();
  const run_trace_fn run = make_runner(workers);

  std::vector<std::pair<std::string, double>> m;
  bench::region_stats rs{};
  std::string answer;
  if (sweep.empty()) {
    replay_result last;
    auto [sum, s] = bench::measure(warmup, reps, [&] {
      last = replay_once(tr, rho, static_cast<std::size_t>(count), workers, unit_ns, run);
      return last.checksum;
    });
    answer = std::to_string(sum);
    rs = s;
    rs.region_s = rs.region_s_min = last.flow.mean_ms / 1e3;  // the ratio column compares mean flow
    m = {{"flow_ms_mean", last.flow.mean_ms}, {"flow_ms_p50", last.flow.p50_ms}, {"flow_ms_p99", last.flow.p99_ms},
         {"flow_ms_max", last.flow.max_ms}, {"jobs", static_cast<double>(last.jobs)},
         {"rate_per_s", last.lambda_per_s}};
    if (last.has_excl) {
      m.push_back({"flow_excl_start_ms_mean", last.flow_excl_start.mean_ms});
      m.push_back({"flow_excl_start_ms_p50", last.flow_excl_start.p50_ms});
      m.push_back({"flow_excl_start_ms_p99", last.flow_excl_start.p99_ms});
    }
    m.insert(m.end(), last.extra_metrics.begin(), last.extra_metrics.end());
  } else {
    // The sweep's answer is the checksum of its first (always run) load.
    double max_rho = 0, max_rate = 0;
    std::uint64_t first_sum = 0;
    bool first = true;
    const std::int64_t t_start = now_ns();
    for (double r : parse_list(sweep)) {
      const replay_result res = replay_once(tr, r, static_cast<std::size_t>(count), workers, unit_ns, run);
      if (first) first_sum = res.checksum;
      first = false;
      std::fprintf(stderr, "rho %.2f: %zu jobs, %.0f/s, mean flow %.2f ms, p99 %.2f ms\n", r, res.jobs,
                   res.lambda_per_s, res.flow.mean_ms, res.flow.p99_ms);
      if (!sustained(res, tr, workers, unit_ns)) break;
      max_rho = r;
      max_rate = res.lambda_per_s;
    }
    answer = std::to_string(first_sum);
    const double wall = static_cast<double>(now_ns() - t_start) / 1e9;
    // Lower is better in the Summary: seconds per job at the highest sustained rate.
    rs = {max_rate > 0 ? 1.0 / max_rate : wall, max_rate > 0 ? 1.0 / max_rate : wall, 0.0};
    m = {{"max_rate_per_s", max_rate}, {"max_rho", max_rho}};
  }
  m.push_back({"unit_ns", unit_ns});
  bench::print_result("\"" + answer + "\"", rs, m);
  return 0;
}

}  // namespace jobs
