// The EventCount notifier: no lost wake-up, at the protocol level and
// through the runtime (bursts of work after idle periods must complete).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"
#include "sched/notifier.hpp"
#include "sched/worker.hpp"
#include "test_support.hpp"
#include "worker_probe.hpp"

using namespace std::chrono_literals;

using promptly::detail::notifier;
using promptly::detail::sleep_slot;

namespace {

}  // namespace

// A consumer sleeps in its slot whenever the shared counter has not moved;
// a producer bumps it and notifies the slot. A lost wake-up hangs the test
// (CTest's timeout catches it).
TEST(Notifier, EveryNotificationIsSeen) {
  sleep_slot slot;
  std::atomic<int> produced{0};
  const int rounds = static_cast<int>(scaled(200'000));
  std::thread consumer([&] {
    int seen = 0;
    while (seen < rounds) {
      if (produced.load(std::memory_order_seq_cst) > seen) {
        ++seen;
        continue;
      }
      notifier::prepare_wait(slot);
      if (produced.load(std::memory_order_seq_cst) > seen) {
        notifier::cancel_wait(slot);
        continue;
      }
      notifier::commit_wait(slot);
    }
  });
  for (int i = 0; i < rounds; ++i) {
    produced.fetch_add(1, std::memory_order_seq_cst);
    notifier::fence_before_notify();
    notifier::notify(slot);
  }
  consumer.join();
  EXPECT_EQ(produced.load(), rounds);
}

// Notifying one slot wakes exactly that waiter; the others stay asleep.
// Every waiter counts the times its commit_wait returned, and a waiter that
// was woken by mistake goes back to sleep, so "still asleep" is checked as:
// the slot is `sleeping` (read first) and its waiter never returned (read
// second). A stray notification makes the slot leave `sleeping` before
// notify() returns, and the state only comes back after the count moved, so
// the check needs no waiting.
TEST(Notifier, NotificationsAreAimedAtOneSlot) {
  constexpr int n = 4, target = 2;
  std::vector<sleep_slot> slots(n);
  std::vector<std::atomic<int>> wakeups(n);
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&, i] {
      auto& s = slots[static_cast<std::size_t>(i)];
      for (;;) {
        notifier::prepare_wait(s);
        if (stop.load()) {
          notifier::cancel_wait(s);
          return;
        }
        notifier::commit_wait(s);
        wakeups[static_cast<std::size_t>(i)].fetch_add(1);
        if (i == target) return;
      }
    });
  auto asleep = [&](int i) {
    const auto k = static_cast<std::size_t>(i);
    return slots[k].state.load() == sleep_slot::sleeping && wakeups[k].load() == 0;
  };
  // Every waiter is in the futex (not merely preparing) before the notification.
  ASSERT_TRUE(wait_until([&] {
    for (int i = 0; i < n; ++i)
      if (!asleep(i)) return false;
    return true;
  })) << "the waiters never went to sleep";
  EXPECT_TRUE(notifier::notify(slots[target]));
  for (int i = 0; i < n; ++i)
    if (i != target) EXPECT_TRUE(asleep(i)) << "slot " << i << " was woken by a notification aimed at slot " << target;
  ts[target].join();  // its waiter returned from commit_wait
  EXPECT_EQ(wakeups[target].load(), 1);
  for (int i = 0; i < n; ++i)
    if (i != target) EXPECT_TRUE(asleep(i)) << "slot " << i << " woke with slot " << target;
  // A slot with no waiter is not notified, and nobody else is either.
  EXPECT_FALSE(notifier::notify(slots[target]));
  for (int i = 0; i < n; ++i)
    if (i != target) EXPECT_TRUE(asleep(i)) << "slot " << i;
  stop.store(true);
  notifier::fence_before_notify();
  for (int i = 0; i < n; ++i)
    if (i != target) notifier::notify(slots[static_cast<std::size_t>(i)]);
  for (int i = 0; i < n; ++i)
    if (i != target) ts[static_cast<std::size_t>(i)].join();
}

TEST(Notifier, TimedWaitReturnsWithoutNotification) {
  sleep_slot slot;
  notifier::prepare_wait(slot);
  const auto t0 = std::chrono::steady_clock::now();
  notifier::commit_wait(slot, 2ms);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1ms);
  EXPECT_FALSE(notifier::is_waiting(slot));
}

// Bursts of outside submissions, alternately after every worker has gone to
// sleep in its slot (the wake-up must not be lost) and right after the
// previous burst, while workers are still between exploring and sleeping.
class NotifierBursts : public ::testing::TestWithParam<unsigned> {};

// With idle_yield_bound 1 an idle thief yields once before it prepares to
// sleep: the wake-up by the next injection is all that finds the burst.
TEST_P(NotifierBursts, BurstsAfterIdlePeriodsComplete) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.idle_yield_bound = GetParam();
  promptly::runtime rt(cfg);
  const auto ws = capture_workers(rt);
  ASSERT_EQ(ws.size(), cfg.workers) << "could not run one task on every worker";
  for (int burst = 0; burst < 30; ++burst) {
    if (burst % 2 == 0) {
      ASSERT_TRUE(wait_until([&] { return all_asleep(ws); })) << "burst " << burst << ": the idle workers never slept";
    }
    std::vector<promptly::future<int>> fs;
    for (int i = 0; i < 50; ++i) fs.push_back(rt.submit([i] { return i; }));
    int sum = 0;
    for (auto& f : fs) sum += f.get();
    EXPECT_EQ(sum, 49 * 50 / 2);
  }
}
INSTANTIATE_TEST_SUITE_P(IdleYieldBound, NotifierBursts, ::testing::Values(0u, 1u));

// A fork-join computation whose thieves sleep after one yield whenever no
// worker is active still spreads and completes (Lemma 1': the first worker to
// become active wakes a thief).
TEST(Notifier, ForkJoinCompletesWithTheShortestIdleSpin) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.idle_yield_bound = 1;
  promptly::runtime rt(cfg);
  for (int round = 0; round < 20; ++round) {
    std::atomic<long> leaves{0};
    rt.run([&] { promptly::parallel_for(0, 4096, 16, [&](int) { leaves.fetch_add(1, std::memory_order_relaxed); }); });
    EXPECT_EQ(leaves.load(), 4096) << "round " << round;
  }
}
