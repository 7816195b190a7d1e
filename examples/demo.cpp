// ./run demo: a few-second showcase of the core runtime. fib with and
// without a serial cutoff on Promptly and oneTBB (task_group), same
// algorithm, same worker count; medians of 5 in-process runs.
// This is a showcase, not the benchmark: bench/results/core/ has the
// measured comparison with spreads and all peers.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <promptly/promptly.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

long serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }

long promptly_fib(int n, int cutoff) {
  if (n < cutoff) return serial_fib(n);
  auto [a, b] = promptly::join([&] { return promptly_fib(n - 1, cutoff); }, [&] { return promptly_fib(n - 2, cutoff); });
  return a + b;
}

long tbb_fib(int n, int cutoff) {
  if (n < cutoff) return serial_fib(n);
  long a = 0, b = 0;
  tbb::task_group g;
  g.run([&] { a = tbb_fib(n - 1, cutoff); });
  b = tbb_fib(n - 2, cutoff);
  g.wait();
  return a + b;
}

double median_ms(const std::function<long()>& f, long expect) {
  std::vector<double> ms;
  for (int r = 0; r < 6; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    long v = f();
    auto t1 = std::chrono::steady_clock::now();
    if (v != expect) {
      std::fprintf(stderr, "wrong result %ld (expected %ld)\n", v, expect);
      std::exit(1);
    }
    if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());  // first run warms up
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  struct job {
    const char* name;
    int n, cutoff;
  };
  const job jobs[] = {{"fib(30), spawn every call", 30, 2}, {"fib(36), serial below 20", 36, 20}};
  std::printf("Promptly %s demo: fork-join fib, Promptly vs oneTBB task_group (median of 5, ms)\n\n", PROMPTLY_VERSION);
  std::printf("%-28s %7s %10s %10s %10s %9s\n", "workload", "workers", "serial", "promptly", "oneTBB", "TBB/Pr.");
  for (const job& j : jobs) {
    const long expect = serial_fib(j.n);
    const double serial = median_ms([&] { return serial_fib(j.n); }, expect);
    for (unsigned w : {1u, 2u}) {
      promptly::runtime_config cfg;
      cfg.workers = w;
      promptly::runtime rt(cfg);
      const double p = median_ms([&] { return rt.run([&] { return promptly_fib(j.n, j.cutoff); }); }, expect);
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, w);
      tbb::task_arena arena(static_cast<int>(w));
      const double t = median_ms([&] { return arena.execute([&] { return tbb_fib(j.n, j.cutoff); }); }, expect);
      std::printf("%-28s %7u %10.1f %10.1f %10.1f %8.2fx\n", j.name, w, serial, p, t, t / p);
    }
  }
  std::printf("\nNext: ./run bench core (all peers, spreads, CPU and memory) and bench/results/core/latest.md\n");
  return 0;
}
