// Liveness of the scheduler across policy moves: the interleavings that lost
// tasks or hung (policy round trips through oblivious, levels alternating
// under aps, a thief moved away from a level that still has sleepers, the
// quantum timer under a level that flips empty/non-empty) and the rule that
// work keeps the level it was created at (graph continuations). Every
// scenario runs under a watchdog that dumps the workers' states on a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using namespace std::chrono_literals;

namespace {

// Waits (event: the workers' sleep slots) until `n` workers are asleep.
void wait_until_asleep(const promptly::runtime& rt, unsigned n) {
  while (rt.stats().sleeping_workers < n) std::this_thread::yield();
}

}  // namespace

// oblivious -> X -> oblivious ... with the workers asleep at each switch: a
// task submitted at level 1 after the switch must run. (Workers that went to
// sleep while roaming kept a stale view of the mode and spun forever.)
TEST(SchedLiveness, PolicyRoundTripThroughObliviousLosesNoTask) {
  for (const std::string target : {"prompt", "aps", "fair"}) {
    promptly::runtime rt(config(2, "prompt"));
    watchdog guard(60s, "policy round trip oblivious -> " + target, [&] { return describe(rt); });
    for (int round = 0; round < 3; ++round) {
      rt.set_policy("oblivious");
      for (int i = 0; i < 5; ++i) EXPECT_EQ(rt.run([] { return fib(15); }), 610);
      wait_until_asleep(rt, 2);
      rt.set_policy(target);
      EXPECT_EQ(rt.submit(promptly::level{1}, [] { return fib(12); }).get(), 144) << target;
      wait_until_asleep(rt, 2);
      rt.set_policy("oblivious");
      EXPECT_EQ(rt.submit(promptly::level{2}, [] { return fib(12); }).get(), 144) << target;
    }
  }
}

// An outside thread alternates small fork-join tasks between levels 0 and 1
// and waits for each. Under aps this hung after 10^4-10^5 iterations: a
// worker given no level slept on a deque holding a parked continuation.
TEST(SchedLiveness, AlternatingLevelsUnderEveryPolicyComplete) {
  for (const std::string policy : {"aps", "prompt", "fair"}) {
    // aps hung after 10^4-10^5 iterations; the others are regression checks.
    const int iterations = static_cast<int>(scaled(policy == "aps" ? 50000 : 10000, 25));
    for (unsigned workers : {2u, 8u}) {
      promptly::runtime rt(config(workers, policy, 2));
      watchdog guard(120s, "alternating levels under " + policy, [&] { return describe(rt); });
      long sum = 0;
      for (int i = 0; i < iterations; ++i) {
        sum += rt.submit(promptly::level{static_cast<unsigned>(i % 2)}, [] {
                    auto [a, b] = promptly::join([] { return 1; }, [] { return 2; });
                    return a + b;
                  }).get();
      }
      EXPECT_EQ(sum, 3L * iterations) << policy << " with " << workers << " workers";
    }
  }
}

// Work keeps the level it was created at: a level-1 graph chain must run
// entirely at level 1 while urgent level-0 tasks keep arriving and pulling
// the workers to level 0 (a worker moved to level 0 used to run its cached
// graph continuation there, relabelling every successor).
TEST(SchedLiveness, GraphContinuationsKeepTheirLevelWhenWorkersMove) {
  for (unsigned workers : {1u, 2u}) {
    promptly::runtime rt(config(workers, "prompt", 2));
    watchdog guard(60s, "graph chain with urgent arrivals", [&] { return describe(rt); });
    const int nodes = static_cast<int>(scaled(2000, 10));
    std::atomic<int> wrong_level{0};
    std::atomic<int> ran{0};
    promptly::graph g("chain");
    promptly::graph_task prev;
    for (int i = 0; i < nodes; ++i) {
      auto t = g.emplace([&] {
        if (promptly::current_level() != 1) wrong_level.fetch_add(1, std::memory_order_relaxed);
        ran.fetch_add(1, std::memory_order_relaxed);
        for (volatile int k = 0; k < 2000; ++k) {
        }
      });
      if (i > 0) prev.precede(t);
      prev = t;
    }
    auto run = g.run(rt, promptly::level{1});
    int urgent_wrong = 0;
    while (ran.load(std::memory_order_relaxed) < nodes) {
      urgent_wrong += rt.submit(promptly::level{0}, [] { return promptly::current_level() != 0 ? 1 : 0; }).get();
    }
    run.get();
    EXPECT_EQ(ran.load(), nodes);
    EXPECT_EQ(wrong_level.load(), 0) << "background graph nodes ran at the urgent level (" << workers << " workers)";
    EXPECT_EQ(urgent_wrong, 0);
  }
}

namespace {

// A policy whose allotment the test sets; it applies it at every decision
// (the pool events the test causes by submitting).
class scripted_policy final : public promptly::ext::policy {
 public:
  explicit scripted_policy(std::shared_ptr<std::vector<std::atomic<unsigned>>> script) : script_(std::move(script)) {}
  std::string_view name() const noexcept override { return "scripted"; }
  void on_event(const promptly::ext::event&, promptly::ext::decision& d) override {
    for (std::size_t p = 0; p < script_->size(); ++p) d.allot(static_cast<promptly::ext::pool_id>(p), (*script_)[p].load());
  }

 private:
  std::shared_ptr<std::vector<std::atomic<unsigned>>> script_;
};

}  // namespace

// Lemma 1 of adaptive work stealing per level across moves: while a worker
// of a level is active and another worker of it is not, a thief of that
// level exists. Three workers at level 1: one runs a task, one sleeps, one
// is the last (napping) thief. An urgent task then makes the policy move
// one of them to level 0. If it moved the last thief, that thief must wake
// the sleeper; otherwise the task's later parallelism (a join whose halves
// meet) finds no thief. Which worker moves depends on the roles the workers
// happened to take, so the scenario repeats.
TEST(SchedLiveness, AThiefMovedAwayLeavesAThiefBehind) {
  promptly::runtime rt(config(3, "prompt", 2));
  auto script = std::make_shared<std::vector<std::atomic<unsigned>>>(2);
  (*script)[0] = 0;
  (*script)[1] = 3;
  rt.set_policy(std::make_unique<scripted_policy>(script));
  const int rounds = under_tsan ? 6 : 16;
  for (int round = 0; round < rounds; ++round) {
    watchdog guard(60s, "round " + std::to_string(round) + " of thief moved away", [&] { return describe(rt); });
    (*script)[0] = 0;
    (*script)[1] = 3;
    std::atomic<bool> started{false}, go{false}, release_urgent{false};
    auto task = rt.submit(promptly::level{1}, [&] {  // its arrival applies {0, 3}
      started = true;
      while (!go.load()) std::this_thread::yield();  // no strand boundary: stays at level 1
      std::atomic<bool> b_started{false};
      auto [a, b] = promptly::join(
          [&] {
            while (!b_started.load()) std::this_thread::yield();  // only a thief can start b
            return 1;
          },
          [&] {
            b_started = true;
            return 2;
          });
      return a + b;
    });
    while (!started.load()) std::this_thread::yield();
    wait_until_asleep(rt, 2);  // one sleeper and the napping last thief
    (*script)[0] = 1;
    (*script)[1] = 2;
    auto urgent = rt.submit(promptly::level{0}, [&] {  // its arrival applies {1, 2}
      while (!release_urgent.load()) std::this_thread::yield();
    });
    // The decision has moved a worker (maybe the task's own: the task then
    // parks at its join and a level-1 worker mugs it).
    auto moved_one = [&] {
      for (const auto& w : rt.stats().worker_states)
        if (w.assigned == 0) return true;
      return false;
    };
    while (!moved_one()) std::this_thread::yield();
    go = true;
    EXPECT_EQ(task.get(), 3);
    release_urgent = true;
    urgent.get();
  }
}

// The quantum timer decides on its deadline whatever else wakes it: a level
// that becomes non-empty and empty again thousands of times per second must
// not freeze aps desires or fair rounds.
TEST(SchedLiveness, QuantaAdvanceWhileALevelFlips) {
  for (const std::string policy : {"aps", "fair"}) {
    promptly::runtime_config cfg = config(2, policy, 3);
    cfg.aps.quantum = 20ms;
    cfg.fair.round = 20ms;
    promptly::runtime rt(cfg);
    watchdog guard(120s, "quanta under a flipping level (" + policy + ")", [&] { return describe(rt); });
    std::atomic<bool> stop{false};
    auto background = rt.submit(promptly::level{2}, [&] {
      promptly::parallel_for(0, 2, 1, [&](int) {
        while (!stop.load(std::memory_order_relaxed)) promptly::yield();
      });
    });
    // Level 0 flips: a tiny task, then (event) the decision that takes the
    // level's workers away once it is empty again, then the next task. Flips come every
    // few milliseconds, well within the 20 ms quantum, so a timer that
    // pushed its deadline out at every event would never tick; one that
    // decides on its deadline ticks once per 20 ms of the run.
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t start = rt.stats().quanta;
    for (int flip = 0; flip < 100; ++flip) {
      rt.submit(promptly::level{0}, [] { return 0; }).get();
      while (rt.stats().levels[0].allotted != 0) std::this_thread::yield();  // the policy saw it empty
    }
    const std::uint64_t ticks = rt.stats().quanta - start;
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    // At least a third of the quanta the run lasted (a wide margin for a
    // loaded machine; the starving timer gets none).
    EXPECT_GE(ticks * 3 + 1, static_cast<std::uint64_t>(elapsed / 20ms))
        << policy << ": the quantum timer starved while a level flipped";
    EXPECT_GE(elapsed, 20ms * 3) << "the flips were too fast to test the timer";
    stop = true;
    background.get();
  }
}
