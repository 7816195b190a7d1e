// The EventCount notifier: no lost wake-up, at the protocol level and
// through the runtime (bursts of work after idle periods must complete).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"
#include "sched/notifier.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;

using promptly::detail::notifier;
using promptly::detail::sleep_slot;

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
TEST(Notifier, NotificationsAreAimedAtOneSlot) {
  std::vector<sleep_slot> slots(4);
  std::atomic<bool> go{false};
  std::atomic<int> woke{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&, i] {
      auto& s = slots[static_cast<std::size_t>(i)];
      for (;;) {
        if (go.load() && i == 2) break;
        notifier::prepare_wait(s);
        if ((go.load() && i == 2) || woke.load() == 100) {
          notifier::cancel_wait(s);
          break;
        }
        notifier::commit_wait(s);
      }
      if (woke.load() != 100) woke.fetch_add(1);
    });
  std::this_thread::sleep_for(20ms);
  go.store(true);
  notifier::fence_before_notify();
  notifier::notify(slots[2]);
  while (woke.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(woke.load(), 1);
  woke.store(100);
  notifier::fence_before_notify();
  for (auto& s : slots) notifier::notify(s);
  for (auto& t : ts) t.join();
}

TEST(Notifier, TimedWaitReturnsWithoutNotification) {
  sleep_slot slot;
  notifier::prepare_wait(slot);
  const auto t0 = std::chrono::steady_clock::now();
  notifier::commit_wait(slot, 2ms);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1ms);
  EXPECT_FALSE(notifier::is_waiting(slot));
}

// Bursts of outside submissions after the workers have gone to sleep.
TEST(Notifier, BurstsAfterIdlePeriodsComplete) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  promptly::runtime rt(cfg);
  for (int burst = 0; burst < 30; ++burst) {
    std::this_thread::sleep_for(std::chrono::milliseconds(burst % 3 == 0 ? 15 : 1));
    std::vector<promptly::future<int>> fs;
    for (int i = 0; i < 50; ++i) fs.push_back(rt.submit([i] { return i; }));
    int sum = 0;
    for (auto& f : fs) sum += f.get();
    EXPECT_EQ(sum, 49 * 50 / 2);
  }
}
