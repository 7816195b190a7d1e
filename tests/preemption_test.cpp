// Preemption of long strands (src/sched/README.md, "Preemption"): urgent work runs while every
// worker is inside a strand of a less urgent pool that reaches no strand boundary.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "watchdog.hpp"

namespace {

using namespace std::chrono_literals;

promptly::runtime_config two_workers(const std::string& policy) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.levels = 3;
  cfg.policy = policy;
  return cfg;
}

// Spins (no strand boundary: no spawn, sync, get or yield) until `until` is set.
void spin_until(const std::atomic<bool>& until) {
  while (!until.load(std::memory_order_acquire)) {
  }
}

// Every worker inside a strand of level 2 that ends only when a task of level 0 sets the flag:
// without preemption the level-0 task never runs, and the watchdog fails the test.
class Preemption : public ::testing::TestWithParam<std::string> {};

TEST_P(Preemption, UrgentWorkRunsWhileEveryWorkerIsInsideALessUrgentStrand) {
  promptly::runtime rt(two_workers(GetParam()));
  watchdog guard(30s, "urgent work behind strands under " + GetParam(), [&] {
    return "preemptions: " + std::to_string(rt.stats().preemptions);
  });
  std::atomic<bool> urgent_ran{false};
  std::atomic<int> spinning{0};
  std::vector<promptly::future<int>> strands;
  for (int i = 0; i < 2; ++i)
    strands.push_back(rt.submit(promptly::level{2}, [&, i] {
      spinning.fetch_add(1, std::memory_order_acq_rel);
      spin_until(urgent_ran);
      return i;
    }));
  while (spinning.load(std::memory_order_acquire) < 2) std::this_thread::yield();  // both cores are inside
  auto urgent = rt.submit(promptly::level{0}, [&] { urgent_ran.store(true, std::memory_order_release); });
  urgent.get();
  EXPECT_EQ(strands[0].get() + strands[1].get(), 1) << "the preempted strands finish with their results";
  const promptly::runtime_stats s = rt.stats();
  EXPECT_GE(s.preemptions, 1u);
  EXPECT_GE(s.mechanism.preempt.samples, 1u);
  EXPECT_EQ(s.workers, 2u) << "the standby thread is not a core";
}

// A strand that throws after it was preempted: the exception reaches its joiner; one that holds
// a std::binary_semaphore across the preemption releases it afterwards.
TEST_P(Preemption, APreemptedStrandKeepsItsExceptionAndItsLock) {
  promptly::runtime rt(two_workers(GetParam()));
  watchdog guard(30s, "exception and lock across preemption under " + GetParam());
  std::atomic<bool> urgent_ran{false};
  std::atomic<int> spinning{0};
  std::binary_semaphore held{1};
  auto thrower = rt.submit(promptly::level{2}, [&] {
    spinning.fetch_add(1, std::memory_order_acq_rel);
    spin_until(urgent_ran);
    throw std::runtime_error("after preemption");
  });
  auto locker = rt.submit(promptly::level{2}, [&] {
    held.acquire();
    spinning.fetch_add(1, std::memory_order_acq_rel);
    spin_until(urgent_ran);
    held.release();
    return 7;
  });
  while (spinning.load(std::memory_order_acquire) < 2) std::this_thread::yield();
  rt.submit(promptly::level{0}, [&] { urgent_ran.store(true, std::memory_order_release); }).get();
  EXPECT_THROW(thrower.get(), std::runtime_error);
  EXPECT_EQ(locker.get(), 7);
  EXPECT_TRUE(held.try_acquire()) << "the semaphore was released after the preemption";
}

// Destroying the runtime while urgent work waits behind strands: the destructor waits for every
// accepted task, and the urgent one still gets its standby.
TEST_P(Preemption, ShutdownWaitsForUrgentWorkThatNeedsAPreemption) {
  std::atomic<bool> urgent_ran{false};
  std::atomic<int> spinning{0};
  watchdog guard(30s, "shutdown with urgent work behind strands under " + GetParam());
  {
    promptly::runtime rt(two_workers(GetParam()));
    std::vector<promptly::future<void>> dropped;  // released before the runtime: nobody waits on them
    for (int i = 0; i < 2; ++i)
      dropped.push_back(rt.submit(promptly::level{2}, [&] {
        spinning.fetch_add(1, std::memory_order_acq_rel);
        spin_until(urgent_ran);
      }));
    while (spinning.load(std::memory_order_acquire) < 2) std::this_thread::yield();
    dropped.push_back(rt.submit(promptly::level{0}, [&] { urgent_ran.store(true, std::memory_order_release); }));
    dropped.clear();
  }  // the destructor runs everything accepted
  EXPECT_TRUE(urgent_ran.load());
}

INSTANTIATE_TEST_SUITE_P(Policies, Preemption, ::testing::Values("prompt", "aps", "fair"),
                         [](const auto& info) { return info.param; });

// A user policy that does not ask for strand events keeps its cores' strands uninterrupted:
// the urgent task runs only once a strand ends. What is checked is an absence (no preemption
// while the strands spin), so the test gives the runtime a window of many thresholds to do
// the wrong thing; it cannot pass by accident if preemption happened.
class allot_most_urgent final : public promptly::ext::policy {
 public:
  std::string_view name() const noexcept override { return "most-urgent-no-preemption"; }
  void on_event(const promptly::ext::event& ev, promptly::ext::decision& d) override {
    if (ev.kind == promptly::ext::event_kind::waiting_behind_strands) heard_strand_event.store(true);
    const auto busy = d.pools_with_work();
    if (!d.pools().empty()) d.allot(busy.empty() ? d.pools()[0].id : busy[0].id, d.core_count());
  }
  std::atomic<bool>& heard_strand_event;
  explicit allot_most_urgent(std::atomic<bool>& heard) : heard_strand_event(heard) {}
};

// Both workers spin in level-2 strands until released; a level-0 task is submitted and given
// 50 thresholds to run. Returns whether it ran in that window (then releases the strands and
// waits for everything).
bool urgent_ran_beside_spinning_strands(promptly::runtime& rt, std::chrono::microseconds threshold) {
  std::atomic<bool> release{false}, urgent_ran{false};
  std::atomic<int> spinning{0};
  std::vector<promptly::future<void>> strands;
  for (int i = 0; i < 2; ++i)
    strands.push_back(rt.submit(promptly::level{2}, [&] {
      spinning.fetch_add(1, std::memory_order_acq_rel);
      spin_until(release);
    }));
  while (spinning.load(std::memory_order_acquire) < 2) std::this_thread::yield();
  auto urgent = rt.submit(promptly::level{0}, [&] { urgent_ran.store(true, std::memory_order_release); });
  const auto until = std::chrono::steady_clock::now() + 50 * threshold;
  while (std::chrono::steady_clock::now() < until && !urgent_ran.load()) std::this_thread::yield();
  const bool ran = urgent_ran.load();
  release.store(true, std::memory_order_release);
  urgent.get();
  for (auto& s : strands) s.get();
  return ran;
}

TEST(PreemptionOff, APolicyThatDoesNotAskForStrandEventsNeverPreempts) {
  promptly::runtime_config cfg = two_workers("prompt");
  promptly::runtime rt(cfg);
  std::atomic<bool> heard{false};
  rt.set_policy(std::make_unique<allot_most_urgent>(heard));
  watchdog guard(30s, "strands under a policy without preemption");
  EXPECT_FALSE(urgent_ran_beside_spinning_strands(rt, cfg.preemption.threshold))
      << "no standby runs work for a policy that did not ask";
  EXPECT_EQ(rt.stats().preemptions, 0u);
  EXPECT_FALSE(heard.load());
}

TEST(PreemptionOff, DisabledInTheConfigNothingPreempts) {
  promptly::runtime_config cfg = two_workers("prompt");
  cfg.preemption.enabled = false;
  promptly::runtime rt(cfg);
  watchdog guard(30s, "strands with preemption disabled");
  EXPECT_FALSE(urgent_ran_beside_spinning_strands(rt, promptly::preemption_params{}.threshold));
  EXPECT_EQ(rt.stats().preemptions, 0u);
}

TEST(PreemptionConfig, BadValuesAreRejectedByName) {
  promptly::runtime_config cfg;
  cfg.preemption.threshold = 10us;
  try {
    promptly::validate(cfg);
    FAIL() << "a 10 us threshold was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("preemption.threshold"), std::string::npos) << e.what();
  }
  cfg = {};
  cfg.preemption.standby_threads = 0;
  EXPECT_THROW(promptly::validate(cfg), std::invalid_argument);
}

}  // namespace
