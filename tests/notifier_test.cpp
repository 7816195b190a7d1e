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

// A consumer sleeps on the notifier whenever the shared counter has not
// moved; a producer bumps it and notifies. A lost wake-up hangs the test
// (CTest's timeout catches it).
TEST(Notifier, EveryNotificationIsSeen) {
  promptly::detail::notifier n;
  std::atomic<int> produced{0};
  const int rounds = static_cast<int>(scaled(200'000));
  std::thread consumer([&] {
    int seen = 0;
    while (seen < rounds) {
      if (produced.load(std::memory_order_seq_cst) > seen) {
        ++seen;
        continue;
      }
      auto key = n.prepare_wait();
      if (produced.load(std::memory_order_seq_cst) > seen) {
        n.cancel_wait();
        continue;
      }
      n.commit_wait(key);
    }
  });
  for (int i = 0; i < rounds; ++i) {
    produced.fetch_add(1, std::memory_order_seq_cst);
    n.notify_one();
  }
  consumer.join();
  EXPECT_EQ(produced.load(), rounds);
}

TEST(Notifier, NotifyAllWakesEverySleeper) {
  promptly::detail::notifier n;
  std::atomic<bool> go{false};
  std::atomic<int> woke{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&] {
      for (;;) {
        if (go.load()) break;
        auto key = n.prepare_wait();
        if (go.load()) {
          n.cancel_wait();
          break;
        }
        n.commit_wait(key);
      }
      woke.fetch_add(1);
    });
  std::this_thread::sleep_for(20ms);
  go.store(true);
  n.notify_all();
  for (auto& t : ts) t.join();
  EXPECT_EQ(woke.load(), 4);
}

TEST(Notifier, TimedWaitReturnsWithoutNotification) {
  promptly::detail::notifier n;
  auto key = n.prepare_wait();
  const auto t0 = std::chrono::steady_clock::now();
  n.commit_wait(key, 2ms);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1ms);
  EXPECT_EQ(n.waiting(), 0);
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
