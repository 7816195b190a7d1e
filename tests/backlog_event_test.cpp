// Backlog events (ext::policy::wants_backlog_events, event_kind::backlog): a
// pool with work whose injection queue grows to two tasks is news to a
// policy that asked for it, and only to such a policy; aps's variant then
// gives the queued work a core at once instead of at its next quantum tick.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "recording_policy.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;
using promptly::ext::event_kind;

// Runs a loop with strand boundaries at level 1 and `blocker` at level 0,
// which holds level 0's core (a strand with no boundary) until released,
// then submits two more level-0 tasks from this thread, so that they queue
// behind it. The level-1 loop decides on events at its next yield. Without
// it the only working worker would be the blocker, which never reaches a
// boundary: events then wait for the runtime's long-strand mark and a
// sleeper's wake-up (src/sched/README.md, "Beside a long strand"), which
// the test of that rule covers.
struct queue_behind_a_busy_core {
  explicit queue_behind_a_busy_core(promptly::runtime& rt) {
    background = rt.submit(promptly::level{1}, [this] {
      background_running.store(true);
      long rounds = 0;
      while (!release.load()) {
        promptly::yield();
        ++rounds;
      }
      return rounds;
    });
    EXPECT_TRUE(wait_until([&] { return background_running.load(); }));
    blocker = rt.submit(promptly::level{0}, [this] {
      started.store(true);
      while (!release.load()) std::this_thread::yield();
      return 0L;
    });
    EXPECT_TRUE(wait_until([&] { return started.load(); }));
    for (int i = 0; i < 2; ++i) queued.push_back(rt.submit(promptly::level{0}, [this] { return ran.fetch_add(1) + 1L; }));
  }
  void finish() {
    release.store(true);
    EXPECT_EQ(blocker.get(), 0);
    for (auto& f : queued) EXPECT_GE(f.get(), 1);
    EXPECT_EQ(ran.load(), 2);
    EXPECT_GE(background.get(), 0);
  }
  std::atomic<bool> background_running{false}, started{false}, release{false};
  std::atomic<int> ran{0};
  promptly::future<long> background, blocker;
  std::vector<promptly::future<long>> queued;
};

TEST(BacklogEvents, APolicyThatAsksHearsOfAQueueFormingAtAPoolWithWork) {
  promptly::runtime rt(config(2, "prompt", 2));
  one_core_per_pool* policy = install_one_core_per_pool(rt, true);
  queue_behind_a_busy_core q(rt);
  EXPECT_TRUE(wait_until([&] { return policy->saw(event_kind::backlog, 0); })) << "no backlog event for level 0";
  q.finish();
}

TEST(BacklogEvents, APolicyThatDoesNotAskHearsNone) {
  promptly::runtime rt(config(2, "prompt", 2));
  one_core_per_pool* policy = install_one_core_per_pool(rt, false);
  queue_behind_a_busy_core q(rt);
  // Events are taken in batches, each batch every bit posted before it: once
  // the policy hears of a pool created after the queue formed, it would have
  // heard of a backlog event posted for it.
  const promptly::pool later = rt.create_pool({.rank = 1});
  EXPECT_TRUE(wait_until([&] { return policy->saw(event_kind::pool_added, later.id); }));
  EXPECT_FALSE(policy->saw(event_kind::backlog, 0));
  q.finish();
  rt.remove_pool(later);
}

// aps gives the most urgent pool whose work queues one core more at each
// decision (the backlog floor). With a quantum of 10 minutes the next tick
// never comes during the test: the queued level-0 task starts while the
// blocker still holds level 0's core only because the backlog event made a
// decision, which moved the core running level 1's loop (a strand boundary
// at each yield) to level 0.
TEST(BacklogEvents, ApsGivesQueuedWorkASecondCoreWithoutWaitingForATick) {
  promptly::runtime_config c = config(2, "aps", 2);
  c.aps.quantum = std::chrono::minutes(10);
  promptly::runtime rt(c);
  queue_behind_a_busy_core q(rt);
  EXPECT_TRUE(wait_until([&] { return q.ran.load() >= 1; }))
      << "the queued level-0 work waited for the blocker: no decision gave level 0 a second core\n"
      << describe(rt);
  q.finish();
}

}  // namespace
