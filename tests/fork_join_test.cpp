// Fork-join: join, task_group, parallel_for; exceptions; deep recursion
// with many parked fibers; holding a lock across a wait.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <numeric>
#include <semaphore>
#include <stdexcept>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"

namespace {

promptly::runtime_config workers(unsigned n, promptly::sleep_mode m = promptly::sleep_mode::adaptive) {
  promptly::runtime_config c;
  c.workers = n;
  c.sleep = m;
  return c;
}

}  // namespace

using namespace std::chrono_literals;

class ForkJoin : public ::testing::TestWithParam<std::tuple<unsigned, promptly::sleep_mode>> {
 protected:
  promptly::runtime rt{workers(std::get<0>(GetParam()), std::get<1>(GetParam()))};
};

TEST_P(ForkJoin, Fib) {
  const int n = under_tsan ? 18 : 27;
  EXPECT_EQ(rt.run([&] { return fib(n); }), fib_serial(n));
}

TEST_P(ForkJoin, JoinVoidAndMixedResults) {
  auto r = rt.run([] {
    std::atomic<int> hits{0};
    auto [a, b] = promptly::join([&] { hits++; }, [&] { return 7; });
    static_assert(std::is_same_v<decltype(a), promptly::nothing>);
    return hits.load() * 100 + b;
  });
  EXPECT_EQ(r, 107);
}

TEST_P(ForkJoin, NestedParallelForSums) {
  const std::size_t n = scaled(200'000, 10);
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), 1);
  std::atomic<std::uint64_t> total{0};
  rt.run([&] {
    promptly::parallel_for(std::size_t{0}, n / 100, 4, [&](std::size_t block) {
      std::uint64_t local = 0;
      std::atomic<std::uint64_t> inner{0};
      promptly::parallel_for(block * 100, block * 100 + 100, 8, [&](std::size_t i) { inner += v[i]; });
      local = inner.load();
      total += local;
    });
  });
  EXPECT_EQ(total.load(), static_cast<std::uint64_t>(n) * (n + 1) / 2);
}

TEST_P(ForkJoin, ParallelForVisitsEveryIndexOnce) {
  std::vector<std::atomic<int>> seen(10'007);
  rt.run([&] { promptly::parallel_for(0, 10'007, 3, [&](int i) { seen[static_cast<std::size_t>(i)]++; }); });
  for (auto& s : seen) ASSERT_EQ(s.load(), 1);
  rt.run([&] { promptly::parallel_for(5, 5, 1, [&](int) { FAIL(); }); });
}

TEST_P(ForkJoin, JoinExceptionRules) {
  // f throws: f's exception wins, g still ran.
  std::atomic<bool> g_ran{false};
  EXPECT_THROW(rt.run([&] {
    promptly::join([]() -> int { throw std::runtime_error("f"); }, [&] { g_ran = true; });
  }),
               std::runtime_error);
  EXPECT_TRUE(g_ran.load());
  // Only g throws.
  EXPECT_THROW(rt.run([] { promptly::join([] {}, [] { throw std::out_of_range("g"); }); }), std::out_of_range);
  // Both throw: f's exception propagates.
  try {
    rt.run([] { promptly::join([] { throw std::runtime_error("f"); }, [] { throw std::logic_error("g"); }); });
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "f");
  }
}

TEST_P(ForkJoin, TaskGroupRunsEverythingAndNestsSpawns) {
  std::atomic<int> count{0};
  rt.run([&] {
    promptly::task_group tg;
    for (int i = 0; i < 100; ++i)
      tg.spawn([&] {
        count++;
        tg.spawn([&] { count++; });  // a child spawning into its own group
      });
    tg.wait();
    EXPECT_EQ(count.load(), 200);
    tg.spawn([&] { count++; });  // reuse after wait
    tg.wait();
  });
  EXPECT_EQ(count.load(), 201);
}

TEST_P(ForkJoin, TaskGroupFirstExceptionWinsAndAllChildrenRun) {
  std::atomic<int> ran{0};
  EXPECT_THROW(rt.run([&] {
    promptly::task_group tg;
    for (int i = 0; i < 50; ++i)
      tg.spawn([&, i] {
        ran++;
        if (i % 10 == 0) throw std::runtime_error("child");
      });
    tg.wait();
  }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 50);
}

// Many tasks park at once on one unfinished future: each needs its own fiber.
TEST_P(ForkJoin, ManyParkedFibers) {
  if (rt.workers() < 2) GTEST_SKIP() << "the gate task needs a second worker";
  const int waiters = under_tsan ? 100 : 1000;
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  rt.run([&] {
    auto gate = promptly::async([&] {
      while (started.load() < waiters) std::this_thread::yield();
      return 1;
    });
    promptly::task_group tg;
    for (int i = 0; i < waiters; ++i)
      tg.spawn([&, gate] {
        started++;
        finished += gate.get();
      });
    tg.wait();
  });
  EXPECT_EQ(finished.load(), waiters);
}

namespace {
long deep(int d) {
  if (d == 0) return 1;
  auto [a, b] = promptly::join([&] { return deep(d - 1); }, [] { return 1L; });
  return a + b;
}
}  // namespace

// Deep recursion through join: thousands of nested frames, stolen at
// random, on fibers with a larger stack (fiber_stack_bytes).
TEST_P(ForkJoin, DeepRecursion) {
  promptly::runtime_config c = workers(std::get<0>(GetParam()), std::get<1>(GetParam()));
  c.fiber_stack_bytes = 8 << 20;
  promptly::runtime big(c);
  const int depth = under_tsan ? 500 : 5000;
  EXPECT_EQ(big.run([&] { return deep(depth); }), depth + 1);
}

// Overflowing a fiber stack hits its guard page instead of silently
// corrupting a neighbour's memory: the fault handler names the overflow and
// the configured size, then aborts.
TEST(ForkJoinDeath, StackOverflowHitsTheGuardPage) {
  if (under_tsan) GTEST_SKIP() << "TSan intercepts the fault";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        promptly::runtime_config c;
        c.workers = 1;
        c.fiber_stack_bytes = 64 * 1024;
        promptly::runtime small(c);
        small.run([] { return deep(1'000'000); });
      },
      ::testing::KilledBySignal(SIGABRT), "fiber stack overflow \\(64 KiB\\); raise runtime_config::fiber_stack_bytes");
}

TEST_P(ForkJoin, JoinOutsideARuntimeIsSequential) {
  auto [a, b] = promptly::join([] { return 1; }, [] { return 2; });
  EXPECT_EQ(a + b, 3);
  EXPECT_THROW((void)promptly::async([] { return 1; }), promptly::not_on_worker);
  promptly::task_group tg;
  EXPECT_THROW(tg.spawn([] {}), promptly::not_on_worker);
}

// A task holds a lock (a std::binary_semaphore, not thread-owned) across a
// join whose second branch was stolen, so the join's sync parks the task's
// fiber with the lock held. Contenders for the lock wait on the parked
// task's worker meanwhile. A runtime that helped on the waiter's stack
// (stealing waits, as TBB or Rayon) would run a contender above the
// waiter's frame: the contender blocks on the lock, the waiter can never
// resume, deadlock. Here the waiter must resume (on any worker), release the
// lock, and every contender must get it.
//
// To make the park certain rather than lucky, the first branch does not
// return until the second branch has started on another worker, and the
// second branch does not return until the first branch's worker has parked a
// fiber (its park epoch moved) and a contender has started. Each of those
// waits is bounded (a hang guard); a run in which the steal or the park did
// not happen is reported, and the test requires every run to have parked.
TEST_P(ForkJoin, LockHeldAcrossWaitDoesNotDeadlock) {
  if (rt.workers() < 2) GTEST_SKIP() << "the second branch must be stolen by another worker";
  using clock = std::chrono::steady_clock;
  const int runs = under_tsan ? 5 : 20;
  const int contenders = 4;
  int parked_runs = 0;
  for (int run = 0; run < runs; ++run) {
    std::binary_semaphore lock(1);
    std::atomic<int> under_lock{0};
    std::atomic<int> lock_timeouts{0};
    std::atomic<int> contenders_started{0};
    std::atomic<bool> ran_on_waiter_stack{false};
    std::atomic<promptly::detail::worker_view*> first_worker{nullptr};
    std::atomic<std::uint64_t> epoch_at_first_return{0};
    std::atomic<bool> joining{false};  // the first branch returned, the join has not
    std::atomic<bool> second_started{false};
    std::atomic<bool> stolen{false};
    std::atomic<bool> parked_with_lock{false};
    rt.run([&] {
      char marker = 0;
      const auto waiter_frame = reinterpret_cast<std::uintptr_t>(&marker);
      std::vector<promptly::future<void>> waiting;
      lock.acquire();
      promptly::join(
          [&] {
            auto* w = promptly::detail::current_worker();
            first_worker = w;
            // Hang guard only: without a thief the branch gives up and the
            // run is counted as not parked.
            const auto deadline = clock::now() + 10s;
            while (!second_started.load() && clock::now() < deadline) std::this_thread::yield();
            // Contenders are left unjoined on this worker's deque, above the
            // join's own job: once the join parks, this worker runs them.
            for (int i = 0; i < contenders; ++i)
              waiting.push_back(promptly::async([&] {
                char here = 0;
                const auto me = reinterpret_cast<std::uintptr_t>(&here);
                // Only while the join waits: after it, the task's own get() may
                // legitimately run a contender that has not started.
                if (joining.load() && me < waiter_frame && waiter_frame - me < 64 * 1024) ran_on_waiter_stack = true;
                contenders_started++;
                // Bounded so that a deadlock fails the test instead of hanging it.
                if (!lock.try_acquire_for(10s)) {
                  lock_timeouts++;
                  return;
                }
                under_lock++;
                lock.release();
              }));
            epoch_at_first_return = w->park_epoch.load();
            joining = true;
          },
          [&] {
            second_started = true;
            auto* w = first_worker.load();
            if (w == nullptr || w == promptly::detail::current_worker()) return;  // not stolen
            stolen = true;
            // Keep the join incomplete until its frame has parked with the
            // lock held (its worker's park epoch moved) and a contender, left
            // for the freed worker, has started.
            const auto deadline = clock::now() + 10s;
            while (clock::now() < deadline) {
              if (joining.load() && w->park_epoch.load() > epoch_at_first_return.load() && contenders_started.load() > 0) {
                parked_with_lock = true;
                return;
              }
              std::this_thread::yield();
            }
          });
      joining = false;
      // The join resumed, possibly on another worker: release the lock.
      lock.release();
      for (auto& f : waiting) f.get();
    });
    EXPECT_EQ(under_lock.load(), contenders) << "run " << run;
    EXPECT_EQ(lock_timeouts.load(), 0) << "run " << run << ": a contender never got the lock";
    EXPECT_FALSE(ran_on_waiter_stack.load()) << "run " << run;
    if (parked_with_lock.load()) ++parked_runs;
    else ADD_FAILURE() << "run " << run << (stolen.load() ? ": the join never parked" : ": the second branch was not stolen");
  }
  EXPECT_EQ(parked_runs, runs);
}

INSTANTIATE_TEST_SUITE_P(Workers, ForkJoin,
                         ::testing::Combine(::testing::Values(1u, 2u, 4u),
                                            ::testing::Values(promptly::sleep_mode::adaptive, promptly::sleep_mode::never)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "w_" +
                                  promptly::to_string(std::get<1>(info.param));
                         });
