// ./run demo: Promptly's showcase. A high-priority interactive stream (a
// ~50 us job of a root and 4 subtasks, submitted from an outside thread
// every 10 ms) runs while a low-priority parallel computation saturates
// every worker. The same program runs with priorities ignored
// (`oblivious`) and with the `prompt` and `aps` policies; the table shows
// the interactive latency and the background's throughput. Raw latencies
// and the aps allotment trace go to the output folder (argument 1), where
// examples/plot_demo.py draws a latency CDF and an allotment timeline.
// A showcase, not the benchmark: bench/results/priority/ has the measured
// comparison with peers and spreads.
#include <promptly/promptly.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

// Busy work that the compiler cannot remove.
long spin(long iterations) {
  volatile long x = 0;
  for (long i = 0; i < iterations; ++i) x = x + i;
  return x;
}

long serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }

long fib(int n) {
  if (n < 16) {
    promptly::yield();  // a strand boundary in the serial leaves
    return serial_fib(n);
  }
  auto [x, y] = promptly::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return x + y;
}

struct outcome {
  std::vector<double> latency_us;
  double background_per_s = 0;
};

// Iterations of spin() that take about `us` microseconds on this machine.
long calibrate(double us) {
  const long probe = 200000;
  const auto t0 = clock_type::now();
  spin(probe);
  const double took = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
  return std::max(1L, static_cast<long>(probe * us / took));
}

outcome run_policy(const std::string& policy, bool background, long job_iters, const std::string& trace, double seconds) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.levels = 3;
  cfg.policy = policy;
  cfg.allotment_trace = trace;
  promptly::runtime rt(cfg);
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  promptly::future<void> bg;
  if (background)
    bg = rt.submit(promptly::level{2}, [&] {
      while (!stop.load(std::memory_order_relaxed)) {
        (void)fib(34);
        rounds.fetch_add(1, std::memory_order_relaxed);
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the background fill the machine
  outcome out;
  const long before = rounds.load();
  const auto start = clock_type::now();
  auto next = start;
  while (clock_type::now() - start < std::chrono::duration<double>(seconds)) {
    next += std::chrono::milliseconds(10);
    std::this_thread::sleep_until(next);
    const auto t0 = clock_type::now();
    rt.submit(promptly::level{0}, [job_iters] {
        promptly::task_group tg;
        for (int i = 0; i < 4; ++i) tg.spawn([job_iters] { spin(job_iters); });
        spin(job_iters);
        tg.wait();
      }).get();
    out.latency_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  out.background_per_s = static_cast<double>(rounds.load() - before) / elapsed;
  stop = true;
  if (background) bg.get();
  return out;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : "build/demo";
  std::filesystem::create_directories(dir);
  const double seconds = argc > 2 ? std::stod(argv[2]) : 3.0;
  const long job_iters = calibrate(10.0);  // 5 strands of ~10 us: ~50 us of work per job
  std::printf("Promptly %s demo: an interactive job (~50 us, root + 4 subtasks) every 10 ms at level 0,\n", PROMPTLY_VERSION);
  std::printf("while parallel fib runs at level 2 on both workers. %.0f s per policy.\n\n", seconds);

  const outcome alone = run_policy("prompt", false, job_iters, "", std::min(seconds, 2.0));
  std::printf("%-22s %10s %10s %10s %16s\n", "policy", "p50 (us)", "p99 (us)", "max (us)", "background/s");
  std::printf("%-22s %10.0f %10.0f %10.0f %16s\n", "no background (floor)", percentile(alone.latency_us, 0.5),
              percentile(alone.latency_us, 0.99), percentile(alone.latency_us, 1.0), "-");
  std::ofstream csv(dir / "latency.csv");
  csv << "policy,latency_us\n";
  for (double v : alone.latency_us) csv << "floor," << v << '\n';
  for (const std::string policy : {"oblivious", "prompt", "aps"}) {
    const std::string trace = policy == "aps" ? (dir / "allotment.csv").string() : "";
    const outcome o = run_policy(policy, true, job_iters, trace, seconds);
    std::printf("%-22s %10.0f %10.0f %10.0f %16.1f\n", policy.c_str(), percentile(o.latency_us, 0.5),
                percentile(o.latency_us, 0.99), percentile(o.latency_us, 1.0), o.background_per_s);
    for (double v : o.latency_us) csv << policy << ',' << v << '\n';
  }
  std::printf("\nbackground/s = rounds of fib(34) finished per second while the interactive stream ran.\n");
  std::printf("Raw data: %s/latency.csv, %s/allotment.csv\n", dir.c_str(), dir.c_str());
  return 0;
}
