// sim_real_run: runs a simulator workload (src/sim/workload.hpp) on the real Promptly runtime
// and reports the measurements `promptly-sim run` reports, in the same JSON schema
// ("source": "real"), so that bench/sim/validate.py can compare the two.
//
//   sim_real_run --workload FILE --workers P --policy NAME [--json OUT]
//
// What it does
//  * One promptly::runtime with P workers, `levels` = the workload's pool count, policy NAME.
//  * Before the timed run: one promptly::graph per request, one task per node; a task spins on
//    steady_clock for the node's work_us; edges follow each node's successor list in its order
//    (the graph executor keeps the first ready successor in the worker's continuation cache
//    and pushes the others on its deque: the rule the simulator models). The runtime is warmed
//    up (one task per level) and left idle for a few ms so that its workers are asleep when the
//    run starts, as in the simulator.
//  * The run: t0 = steady_clock::now(); this (submitter) thread sleeps until each release time
//    t0 + release_us, in release order, and starts that request's graph with
//    graph.run(rt, level{pool}). It runs under SCHED_FIFO when the process may set it (else it
//    says "submitter": "SCHED_OTHER"), so that its wake-ups are not queued behind the workers.
//  * A request finishes when its last sink finishes: every sink counts down an atomic per
//    request after its own work, and the one that brings it to zero stamps steady_clock from
//    inside the task (no waiter's wake-up latency is measured).
//  * cpu_us: user + system CPU time of the process (getrusage RUSAGE_SELF) from just before t0
//    to after every run has completed.
//
// Output (stdout, or the file named by --json):
//   {"source":"real","workers":P,"policy":NAME,"makespan_us":..,"cpu_us":..,
//    "requests":[{"index":i,"kind":..,"pool":p,"release_us":r,"finish_us":f,"response_us":f-r,
//                 "submitted_us":s}, ...], ...}
//   "pauses":[{"start_us":a,"end_us":b}, ...] (below), and per request "paused_us": how much of
//   [submitted_us, finish_us] some pause covered.
// release_us is the workload's (nominal) release time and response_us counts from it;
// submitted_us is when graph.run() was actually called (the submitter's sleep overshoot shows
// as submitted_us - release_us; max_release_lag_us is the largest). Bad arguments or an unreadable / invalid workload: a message
// on stderr and exit status 2; a failure during the run: exit status 1.
//
// Pauses. A spinning strand reads the clock in a tight loop, so two consecutive reads more than
// pause_threshold apart mean its thread was off the CPU in between: the kernel ran another
// thread on that core, or the host stopped the virtual CPU (this VM reports no steal time either
// way). Under --threads fifo they nearly vanish (at most 2.4 ms per 5 runs against 4-24 ms per
// run under CFS here), so most were the kernel's. The simulator models neither, so the
// validation reports them (bench/sim/validate.py).
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <promptly/graph.hpp>
#include <promptly/promptly.hpp>

#include "sim/workload.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* usage =
    "usage: sim_real_run --workload FILE --workers P --policy NAME [--json OUT] [--submitter fifo|normal]\n"
    "                    [--threads normal|fifo]\n"
    "  Runs a promptly-sim workload (format promptly-sim-workload-1) on the real runtime with P\n"
    "  workers and policy NAME (oblivious, prompt, aps, fair, ...) and prints the measurements as\n"
    "  JSON (to OUT with --json). --submitter: the releasing thread's scheduling class, SCHED_FIFO\n"
    "  when permitted (default) or normal.\n";

[[noreturn]] void bad_usage(const std::string& msg) {
  std::fprintf(stderr, "sim_real_run: %s\n%s", msg.c_str(), usage);
  std::exit(2);
}

struct options {
  std::string workload;
  unsigned workers = 0;
  std::string policy;
  std::string json_out;
  bool submitter_fifo = true;
  bool threads_fifo = false;
};

unsigned parse_workers(const std::string& s) {
  std::size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || s[0] == '-' || v == 0 || v > 4096)
    bad_usage("--workers must be an integer from 1 to 4096, got '" + s + "'");
  return static_cast<unsigned>(v);
}

options parse(int argc, char** argv) {
  options o;
  bool have_workers = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (a.rfind("--", 0) != 0) bad_usage("unexpected argument '" + a + "'");
    std::string key = a.substr(2), value;
    if (const auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      if (i + 1 >= argc) bad_usage("missing value for --" + key);
      value = argv[++i];
    }
    if (key == "workload") {
      o.workload = value;
    } else if (key == "workers") {
      o.workers = parse_workers(value);
      have_workers = true;
    } else if (key == "policy") {
      o.policy = value;
    } else if (key == "json") {
      o.json_out = value;
    } else if (key == "submitter") {
      if (value != "fifo" && value != "normal") bad_usage("--submitter must be fifo or normal, got '" + value + "'");
      o.submitter_fifo = value == "fifo";
    } else if (key == "threads") {
      if (value != "fifo" && value != "normal") bad_usage("--threads must be normal or fifo, got '" + value + "'");
      o.threads_fifo = value == "fifo";
    } else {
      bad_usage("unknown option --" + key);
    }
  }
  if (o.workload.empty()) bad_usage("--workload FILE is required");
  if (!have_workers) bad_usage("--workers P is required");
  if (o.policy.empty()) bad_usage("--policy NAME is required");
  return o;
}

// A gap between two clock reads of a spinning strand at least this long is a pause (see the top).
// Far above a clock read's cost (~25 ns) and an interrupt's (a few us), below the 2-4 ms gaps seen.
constexpr auto pause_threshold = std::chrono::microseconds(100);

// Every pause any spinning strand saw during the run. Appended under the mutex (pauses are rare:
// a handful per run), read after every run has completed.
struct pause_log {
  std::mutex mutex;
  std::vector<std::pair<clock_type::time_point, clock_type::time_point>> gaps;
  void add(clock_type::time_point from, clock_type::time_point to) {
    std::lock_guard lock(mutex);
    gaps.emplace_back(from, to);
  }
};
pause_log pauses;

// Busy-waits for `us` microseconds of wall-clock time (steady_clock): the simulator's strand
// of work_us. Wall-clock, not CPU time: a worker the OS preempts still counts as working, as
// its deque and continuation stay with it. Records the gaps that show it was preempted.
inline void spin_us(double us) {
  if (!(us > 0)) return;
  auto prev = clock_type::now();
  const auto end = prev + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double, std::micro>(us));
  while (prev < end) {
    const auto now = clock_type::now();
    if (now - prev >= pause_threshold) [[unlikely]]
      pauses.add(prev, now);
    prev = now;
  }
}

// Per request: its sinks still to finish and the time the last one finished.
struct request_state {
  std::atomic<std::uint32_t> sinks_left{0};
  clock_type::time_point finish{};
  clock_type::time_point submitted{};
};

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

double us_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  const options opt = parse(argc, argv);

  promptly::sim::workload w;
  try {
    w = promptly::sim::load(opt.workload);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sim_real_run: %s\n", e.what());
    return 2;
  }
  if (w.pools > promptly::max_levels) {
    std::fprintf(stderr, "sim_real_run: the workload has %u pools; the runtime has at most %u levels\n", w.pools,
                 promptly::max_levels);
    return 2;
  }

  promptly::runtime_config cfg;
  cfg.workers = opt.workers;
  cfg.levels = w.pools;
  cfg.policy = opt.policy;
  try {
    promptly::validate(cfg);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "sim_real_run: bad runtime configuration: %s\n", e.what());
    return 2;
  }

  // Open the output before the run: an unwritable path fails fast.
  std::ofstream json_file;
  if (!opt.json_out.empty()) {
    json_file.open(opt.json_out);
    if (!json_file) {
      std::fprintf(stderr, "sim_real_run: cannot write '%s'\n", opt.json_out.c_str());
      return 2;
    }
  }

  // --threads fifo: the runtime's threads (workers, policy, I/O) inherit SCHED_FIFO priority 1
  // from this thread, so that the kernel puts a woken worker on an idle core at once. Under CFS
  // it may queue it behind the busy worker that woke it until that one blocks: on this VM, 1% of
  // such wake-ups waited the notifier's whole 1 ms (bench/sim/vcpu_wake.cpp), a placement the
  // simulator does not model. Needs root or CAP_SYS_NICE; refused otherwise.
  if (opt.threads_fifo) {
    sched_param rt_param{};
    rt_param.sched_priority = 1;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt_param) != 0) {
      std::fprintf(stderr, "sim_real_run: --threads fifo: cannot set SCHED_FIFO (needs root or CAP_SYS_NICE)\n");
      return 2;
    }
  }

  try {
    promptly::runtime rt(cfg);
    if (opt.threads_fifo) {  // the submitter stays this thread, raised above the workers below
      sched_param other{};
      pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
    }

    // --- build every request's graph before the timed run ---
    const std::size_t n = w.requests.size();
    auto states = std::make_unique<request_state[]>(n);
    std::vector<promptly::graph> graphs;
    graphs.reserve(n);
    std::size_t tasks = 0;
    double work_us = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const promptly::sim::request& q = w.requests[r];
      request_state* st = &states[r];
      promptly::graph& g = graphs.emplace_back("request " + std::to_string(r));
      g.reserve(q.nodes.size());
      std::vector<promptly::graph_task> t;
      t.reserve(q.nodes.size());
      std::uint32_t sinks = 0;
      for (const promptly::sim::node& x : q.nodes) {
        const double us = x.work_us;
        work_us += us;
        if (x.succ.empty()) {
          ++sinks;
          t.push_back(g.emplace([us, st] {
            spin_us(us);
            // acq_rel: the last sink to finish stamps the time after every other sink's work.
            if (st->sinks_left.fetch_sub(1, std::memory_order_acq_rel) == 1) st->finish = clock_type::now();
          }));
        } else {
          t.push_back(g.emplace([us] { spin_us(us); }));
        }
      }
      for (std::size_t i = 0; i < q.nodes.size(); ++i)
        for (const std::uint32_t s : q.nodes[i].succ) t[i].precede(t[s]);  // in the workload's order
      // relaxed: written before the run starts; graph.run() publishes it to the workers.
      st->sinks_left.store(sinks, std::memory_order_relaxed);
      tasks += q.nodes.size();
    }

    // Release order (stable: requests released together go in index order).
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return w.requests[a].release_us < w.requests[b].release_us; });

    // Warm-up: one task per level (threads, fibers and the policy started), then let the
    // workers go back to sleep so the run starts from an idle runtime like the simulator's.
    for (unsigned l = 0; l < w.pools; ++l) rt.run(promptly::level{l}, [] {});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));

    // The submitter releases on time: the smallest timer slack (default 50 us), and, where the
    // process may (root or CAP_SYS_NICE), SCHED_FIFO, so that when it wakes it preempts a worker
    // at once instead of waiting for a core behind P spinning workers (with P = the number of
    // cores, CFS made it up to 4 ms late). Set here, after the runtime started its threads, so
    // that no worker inherits it.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    sched_param fifo{};
    fifo.sched_priority = opt.threads_fifo ? 2 : 1;  // above FIFO workers, or it waits for one to block
    const bool submitter_fifo = opt.submitter_fifo && pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;

    // --- the timed run ---
    std::vector<promptly::graph_run> runs(n);
    {
      std::lock_guard lock(pauses.mutex);  // only the timed run's pauses count
      pauses.gaps.clear();
    }
    const double cpu0 = cpu_seconds();
    const clock_type::time_point t0 = clock_type::now();
    for (const std::size_t r : order) {
      const promptly::sim::request& q = w.requests[r];
      const auto at = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double, std::micro>(q.release_us));
      std::this_thread::sleep_until(at);
      states[r].submitted = clock_type::now();
      runs[r] = graphs[r].run(rt, promptly::level{q.pool});
    }
    for (promptly::graph_run& run : runs) run.get();  // rethrows a task's exception
    const double cpu1 = cpu_seconds();
    if (submitter_fifo) {
      sched_param other{};
      pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
    }

    // --- report ---
    nlohmann::json reqs = nlohmann::json::array();
    double makespan = 0, max_lag = 0;
    // The pauses in us since t0, by start; they may overlap (different threads).
    std::vector<std::pair<double, double>> gaps;
    for (const auto& [from, to] : pauses.gaps) gaps.emplace_back(us_between(t0, from), us_between(t0, to));
    std::sort(gaps.begin(), gaps.end());
    nlohmann::json pause_list = nlohmann::json::array();
    for (const auto& [lo, hi] : gaps) pause_list.push_back({{"start_us", lo}, {"end_us", hi}});
    // How much of [a, b] the pauses cover, each moment counted once.
    auto paused_within = [&](double a, double b) {
      double covered = 0, reach = a;
      for (const auto& [lo, hi] : gaps) {
        if (lo >= b) break;
        if (hi <= reach) continue;
        covered += std::min(hi, b) - std::max(lo, reach);
        reach = std::min(hi, b);
      }
      return covered;
    };
    for (std::size_t r = 0; r < n; ++r) {
      const promptly::sim::request& q = w.requests[r];
      const double finish = us_between(t0, states[r].finish);
      makespan = std::max(makespan, finish);
      max_lag = std::max(max_lag, us_between(t0, states[r].submitted) - q.release_us);
      reqs.push_back({{"index", r},
                      {"kind", q.kind},
                      {"pool", q.pool},
                      {"release_us", q.release_us},
                      {"finish_us", finish},
                      {"response_us", finish - q.release_us},
                      {"submitted_us", us_between(t0, states[r].submitted)},
                      {"paused_us", paused_within(us_between(t0, states[r].submitted), finish)},
                      {"work_us", promptly::sim::work_of(q)},
                      {"span_us", promptly::sim::span_of(q)}});
    }
    const double cpu_us = (cpu1 - cpu0) * 1e6;
    nlohmann::json out = {{"source", "real"},
                          {"workload", opt.workload},
                          {"workers", opt.workers},
                          {"runtime_workers", rt.workers()},
                          {"policy", opt.policy},
                          {"pools", w.pools},
                          {"tasks", tasks},
                          {"work_us", work_us},
                          {"makespan_us", makespan},
                          {"cpu_us", cpu_us},
                          {"submitter", submitter_fifo ? "SCHED_FIFO" : "SCHED_OTHER"},
                          {"threads", opt.threads_fifo ? "SCHED_FIFO" : "SCHED_OTHER"},
                          {"max_release_lag_us", max_lag},
                          {"pauses", std::move(pause_list)},
                          {"requests", std::move(reqs)}};
    if (json_file.is_open()) {
      json_file << out.dump(1) << '\n';
      json_file.close();
      if (!json_file) {
        std::fprintf(stderr, "sim_real_run: writing '%s' failed\n", opt.json_out.c_str());
        return 1;
      }
    } else {
      std::cout << out.dump(1) << '\n';
    }
    // The graphs are destroyed before the runtime (they were declared after it): every run has
    // completed, so neither waits.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sim_real_run: the run failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
