// Randomized schedules (chaos.hpp).
#include "chaos.hpp"

#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace promptly::detail::chaos {

std::atomic<std::uint64_t> seed{0};
std::atomic<int> fiber_failures{0};
std::atomic<int> stale_steals{0};
std::atomic<int> costly_yields{0};
std::atomic<int> stalled_worker_polls{0};
std::atomic<int> stalled_worker_sleeps{0};
std::atomic<int> late_removal_checks{0};
test_gate at_once_miss_gate;
test_gate ready_event_gate;
test_gate decision_wake_gate;

void test_gate::wait() noexcept {
  int expected = armed;
  if (!state_.compare_exchange_strong(expected, holding, std::memory_order_seq_cst)) return;
  while (state_.load(std::memory_order_seq_cst) == holding) std::this_thread::yield();
  state_.store(off, std::memory_order_seq_cst);
}

namespace {
std::atomic<std::uint64_t> thread_counter{0};

struct generator {
  std::uint64_t seeded_with = 0;
  std::uint64_t state = 0;
};
thread_local generator gen;

std::uint64_t next(generator& g) noexcept {
  // xorshift64*: cheap and good enough to pick perturbations.
  g.state ^= g.state >> 12;
  g.state ^= g.state << 25;
  g.state ^= g.state >> 27;
  return g.state * 0x2545F4914F6CDD1DULL;
}
}  // namespace

void perturb() noexcept {
  const std::uint64_t s = seed.load(std::memory_order_relaxed);
  if (gen.seeded_with != s) {  // first use on this thread, or a new seed
    gen.seeded_with = s;
    const std::uint64_t k = thread_counter.fetch_add(1, std::memory_order_relaxed) + 1;  // relaxed: a ticket
    gen.state = (s ^ (k * 0x9E3779B97F4A7C15ULL)) | 1;
  }
  const std::uint64_t r = next(gen);
  switch (r & 7) {
    case 4:
    case 5:
      sched_yield();
      break;
    case 6:
      for (std::uint64_t i = 0, n = (r >> 8) % 4096; i < n; ++i) asm volatile("" ::: "memory");
      break;
    case 7:
      std::this_thread::sleep_for(std::chrono::microseconds((r >> 8) % 50));
      break;
    default:
      break;
  }
}

void enable(std::uint64_t s) noexcept { seed.store(s, std::memory_order_relaxed); }

std::uint64_t enable_from_environment() noexcept {
  static const std::uint64_t from_env = [] {
    const char* v = std::getenv("PROMPTLY_CHAOS");
    if (v == nullptr || *v == '\0') return std::uint64_t{0};
    const std::uint64_t s = std::strtoull(v, nullptr, 0);
    if (s != 0)  // 0 is off, as when unset
      std::fprintf(stderr, "promptly: PROMPTLY_CHAOS=%llu: randomized schedules on\n", static_cast<unsigned long long>(s));
    return s;
  }();
  if (from_env != 0) enable(from_env);
  return from_env;
}

}  // namespace promptly::detail::chaos
