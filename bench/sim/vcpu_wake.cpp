// How long a sleeping thread takes to run after a notify while the notifying thread keeps its
// core busy: the situation of a worker that finds work and wakes the second worker (Taskflow's
// Lemma 1 hand-over), without the runtime. On this 2-vCPU VM it shows the two real costs the
// simulator's fixed wake cost leaves out (bench/results/sim/README.md):
//   unpinned: the kernel may queue the woken thread behind the busy notifier (it runs when the
//             notifier's 1 ms spin ends);
//   --pin:    the woken thread may only run on the other vCPU, which was idle: the host has to
//             run that vCPU first.
// Built with the bench programs (cmake -DPROMPTLY_BUILD_BENCH=ON): bench-bin/sim_vcpu_wake [--pin].
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
  const bool pin = argc > 1 && std::strcmp(argv[1], "--pin") == 0;
  constexpr int rounds = 200;
  std::mutex m;
  std::condition_variable cv;
  bool go = false;
  clock_type::time_point sent;
  std::vector<double> us;
  std::thread sleeper([&] {
    if (pin) pin_to(1);
    for (int i = 0; i < rounds; ++i) {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return go; });
      go = false;
      us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - sent).count());
    }
  });
  if (pin) pin_to(0);
  for (int i = 0; i < rounds; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(4));  // both threads idle: vCPUs halt
    {
      std::lock_guard lock(m);
      go = true;
      sent = clock_type::now();
    }
    cv.notify_one();
    const auto until = clock_type::now() + std::chrono::milliseconds(1);  // the notifier keeps working
    while (clock_type::now() < until) {
    }
  }
  sleeper.join();
  std::sort(us.begin(), us.end());
  std::printf("%s: notify to running, us: p50 %.1f p90 %.1f p99 %.1f max %.1f (%d wake-ups)\n", pin ? "pinned" : "unpinned",
              us[rounds / 2], us[rounds * 9 / 10], us[rounds * 99 / 100], us.back(), rounds);
}
