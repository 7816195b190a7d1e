// A slow urgent request, traced: the example docs/profiling.md walks through.
//
// Level 1 runs a background loop on each worker whose strands are 5 ms long:
// it crosses a strand boundary (yield()) only every 5 ms. 5-15 ms after the
// previous one ended (uniformly, a fixed seed), a small urgent request (a
// fork-join of four 50 us leaves) arrives at level 0. The gap is random
// because a fixed one locks to the loop's phase: the loop restarts its 5 ms
// when the request ends, so every request would wait the same time.
// The policy moves a worker to level 0 only at a strand boundary, so a
// request that arrives while both workers are inside their 5 ms strands
// waits for the first strand to end. With --yield the background loop
// yields every 100 us and the urgent requests are served within one.
//
//   promptly_slow_request TRACE.json [--yield] [--requests N]
//   tools/promptly-prof TRACE.json
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"

namespace {

void spin_for(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE.json [--yield] [--requests N]\n", argv[0]);
    return 2;
  }
  bool yield = false;
  int requests = 50;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--yield") == 0) {
      yield = true;
    } else if (std::strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
      requests = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (requests <= 0) {
    std::fprintf(stderr, "%s: --requests must be positive\n", argv[0]);
    return 2;
  }

  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.levels = 2;
  cfg.policy = "prompt";
  cfg.trace_file = argv[1];
  promptly::runtime rt(cfg);

  std::atomic<bool> stop{false};
  std::vector<promptly::future<void>> background;
  for (unsigned w = 0; w < cfg.workers; ++w)
    background.push_back(rt.submit(promptly::level{1}, [&stop, yield] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (yield) {
          for (int k = 0; k < 50 && !stop.load(std::memory_order_relaxed); ++k) {
            spin_for(std::chrono::microseconds(100));
            promptly::yield();  // a strand boundary every 100 us
          }
        } else {
          spin_for(std::chrono::milliseconds(5));  // 5 ms without a strand boundary
          promptly::yield();
        }
      }
    }));

  std::vector<double> response_us;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> gap(5000, 15000);  // us
  for (int r = 0; r < requests; ++r) {
    std::this_thread::sleep_for(std::chrono::microseconds(gap(rng)));
    const auto t0 = std::chrono::steady_clock::now();
    rt.submit(promptly::level{0}, [] {
        promptly::join([] { promptly::join([] { spin_for(std::chrono::microseconds(50)); },
                                           [] { spin_for(std::chrono::microseconds(50)); }); },
                       [] { promptly::join([] { spin_for(std::chrono::microseconds(50)); },
                                           [] { spin_for(std::chrono::microseconds(50)); }); });
      }).get();
    response_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  stop = true;
  for (auto& b : background) b.get();
  std::sort(response_us.begin(), response_us.end());
  std::printf("%d urgent requests, background %s: response p50 %.0f us, max %.0f us; trace in %s\n", requests,
              yield ? "yielding every 100 us" : "in 5 ms strands", response_us[response_us.size() / 2],
              response_us.back(), argv[1]);
}
