// How long a sleeping thread takes to run after a notify while the notifying thread keeps its
// core busy: the situation of a worker that finds work and wakes the second worker (Taskflow's
// Lemma 1 hand-over), without the runtime. On this 2-vCPU VM it shows the two real costs the
// simulator's fixed wake cost leaves out (bench/results/sim/README.md):
//   unpinned: the kernel may queue the woken thread behind the busy notifier (it runs when the
//             notifier's 1 ms spin ends);
//   --pin:    the woken thread may only run on the other vCPU, which was idle: the host has to
//             run that vCPU first.
//   --fifo:   both threads under SCHED_FIFO (root or CAP_SYS_NICE): the kernel puts the woken
//             thread on the idle vCPU at once, as sim_real_run --threads fifo does for the
//             runtime's threads; bench/sim/validate.py takes the simulator's wake cost from this.
//   --json:   one JSON object instead of the text line, with every sample ("samples_us"), which
//             promptly-sim run --wake-samples draws wake-up costs from.
// Built with the bench programs (cmake -DPROMPTLY_BUILD_BENCH=ON):
//   bench-bin/sim_vcpu_wake [--pin] [--fifo] [--json]
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

using clock_type = std::chrono::steady_clock;

namespace {
void pin_to(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0) std::fprintf(stderr, "vcpu_wake: cannot pin to CPU %d\n", cpu);
}
}  // namespace

int main(int argc, char** argv) {
  bool pin = false, fifo = false, json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--pin") == 0) {
      pin = true;
    } else if (std::strcmp(argv[i], "--fifo") == 0) {
      fifo = true;
    } else if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      std::fprintf(stderr, "usage: sim_vcpu_wake [--pin] [--fifo] [--json]\nunknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  // Set before the sleeper starts: it inherits the policy (PTHREAD_INHERIT_SCHED, the default).
  if (fifo) {
    sched_param p{};
    p.sched_priority = 1;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0) {
      std::fprintf(stderr, "sim_vcpu_wake: --fifo: cannot set SCHED_FIFO (needs root or CAP_SYS_NICE)\n");
      return 2;
    }
  }
  constexpr int rounds = 200;
  std::mutex m;
  std::condition_variable posted_cv, taken_cv;
  int posted = 0, taken = 0;  // under m: rounds notified, rounds the sleeper has seen
  clock_type::time_point sent;
  std::vector<double> us;
  std::thread sleeper([&] {
    if (pin) pin_to(1);
    for (int i = 0; i < rounds; ++i) {
      std::unique_lock lock(m);
      posted_cv.wait(lock, [&] { return posted > taken; });
      us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - sent).count());
      ++taken;
      taken_cv.notify_one();
    }
  });
  if (pin) pin_to(0);
  for (int i = 0; i < rounds; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(4));  // both threads idle: vCPUs halt
    {
      std::lock_guard lock(m);
      ++posted;
      sent = clock_type::now();
    }
    posted_cv.notify_one();
    const auto until = clock_type::now() + std::chrono::milliseconds(1);  // the notifier keeps working
    while (clock_type::now() < until) {
    }
    std::unique_lock lock(m);  // one wake-up at a time: the next round starts after this one is seen
    taken_cv.wait(lock, [&] { return taken == posted; });
  }
  sleeper.join();
  std::sort(us.begin(), us.end());
  const char* mode = pin ? (fifo ? "pinned, fifo" : "pinned") : (fifo ? "unpinned, fifo" : "unpinned");
  if (json) {
    std::printf("{\"mode\": \"%s\", \"wakeups\": %d, \"p50_us\": %.2f, \"p90_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f, "
                "\"samples_us\": [",
                mode, rounds, us[rounds / 2], us[rounds * 9 / 10], us[rounds * 99 / 100], us.back());
    for (std::size_t i = 0; i < us.size(); ++i) std::printf("%s%.2f", i == 0 ? "" : ", ", us[i]);
    std::printf("]}\n");
  } else {
    std::printf("%s: notify to running, us: p50 %.1f p90 %.1f p99 %.1f max %.1f (%d wake-ups)\n", mode, us[rounds / 2],
                us[rounds * 9 / 10], us[rounds * 99 / 100], us.back(), rounds);
  }
}
