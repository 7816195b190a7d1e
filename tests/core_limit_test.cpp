// Occupancy control (runtime::set_core_limit): with a limit of n, workers
// n.. sleep and run nothing, under every shipped policy (the roaming one
// included) and a user policy; raising the limit wakes them; flipping the
// limit under load loses no task; bad input gets a clear error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
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

// Waits (on the runtime's published state, no sleeps) until every worker
// from `first` on is asleep with no assignment.
void wait_until_asleep_from(const promptly::runtime& rt, unsigned first) {
  for (;;) {
    const promptly::runtime_stats s = rt.stats();
    bool all = true;
    for (unsigned w = first; w < s.worker_states.size(); ++w)
      all = all && s.worker_states[w].assigned == -1 && s.worker_states[w].state == "sleeping";
    if (all) return;
    std::this_thread::yield();
  }
}

// A fork-join tree whose leaves record the threads that ran them.
struct thread_log {
  std::mutex m;
  std::set<std::thread::id> seen;
  void note() {
    std::lock_guard lock(m);
    seen.insert(std::this_thread::get_id());
  }
};
long logged_tree(int depth, thread_log& log) {
  if (depth == 0) {
    log.note();
    return 1;
  }
  auto [a, b] = promptly::join([&] { return logged_tree(depth - 1, log); }, [&] { return logged_tree(depth - 1, log); });
  return a + b;
}

// Two tasks that each wait for the other to start: they finish only if two
// workers run at once.
void rendezvous(promptly::runtime& rt, promptly::level at) {
  std::atomic<int> arrived{0};
  auto meet = [&] {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  };
  auto a = rt.submit(at, meet);
  auto b = rt.submit(at, meet);
  a.get();
  b.get();
}

// A user policy that records how many cores it was shown.
class every_core_to_the_top final : public promptly::ext::policy {
 public:
  std::string_view name() const noexcept override { return "every-core-to-the-top"; }
  void on_event(const promptly::ext::event&, promptly::ext::decision& d) override {
    cores_seen.store(d.core_count());
    const auto pools = d.pools();
    for (unsigned c = 0; c < d.core_count(); ++c) d.give_core(c, pools.front().id);
  }
  std::atomic<unsigned> cores_seen{0};
};

}  // namespace

class CoreLimit : public ::testing::TestWithParam<std::string> {};

// Before the limit existed both workers ran leaves of the tree.
TEST_P(CoreLimit, LimitedWorkersRunNothingAndWakeWhenTheLimitRises) {
  promptly::runtime rt(config(2, GetParam(), 2));
  watchdog guard(60s, "core limit under " + GetParam(), [&] { return describe(rt); });
  for (int round = 0; round < 3; ++round) {
    rt.set_core_limit(1);
    EXPECT_EQ(rt.core_limit(), 1u);
    EXPECT_EQ(rt.stats().core_limit, 1u);
    wait_until_asleep_from(rt, 1);
    thread_log log;
    EXPECT_EQ(rt.submit(promptly::level{round % 2 == 0 ? 0u : 1u}, [&] { return logged_tree(12, log); }).get(), 4096);
    EXPECT_EQ(log.seen.size(), 1u) << "a worker past the core limit ran a task";
    rt.set_core_limit(0);
    EXPECT_EQ(rt.core_limit(), 0u);
    rendezvous(rt, promptly::level{0});  // needs both workers
  }
}

// The limit flips while tasks of three levels and of created pools run:
// every task completes with the right result.
TEST_P(CoreLimit, FlippingTheLimitUnderLoadLosesNoTask) {
  promptly::runtime rt(config(4, GetParam(), 3));
  watchdog guard(120s, "core limit flips under " + GetParam(), [&] { return describe(rt); });
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    const unsigned limits[] = {1, 0, 2, 1, 3, 0, 4, 1};
    for (std::size_t i = 0; !done.load(); ++i) {
      rt.set_core_limit(limits[i % std::size(limits)]);
      std::this_thread::yield();
    }
  });
  for (int round = 0; round < 40; ++round) {
    promptly::pool extra = rt.create_pool({.rank = static_cast<unsigned>(round % 3)});
    std::vector<promptly::future<long>> results;
    for (unsigned l = 0; l < 3; ++l) results.push_back(rt.submit(promptly::level{l}, [] { return fib(20); }));
    results.push_back(rt.submit(extra, [] { return fib(19); }));
    for (unsigned l = 0; l < 3; ++l) EXPECT_EQ(results[l].get(), fib_serial(20));
    EXPECT_EQ(results[3].get(), fib_serial(19));
    rt.remove_pool(extra);
  }
  done.store(true);
  flipper.join();
  rt.set_core_limit(0);
  rendezvous(rt, promptly::level{2});
}

// The limit falls while both workers are deep in one tree whose leaves
// never run out until the test says so: worker 1 stops at its next strand
// boundary under every policy, a steal-boundary one included (its deque
// goes to worker 0, nothing is lost). Once a leaf of worker 1 has seen
// `limited` (acquire: its later relaxed reads of its assignment see the
// limit), its next boundary parks it: the leaves it may still run are the
// two of the join whose spawn it crossed just before (the second runs
// inline after the first, with no boundary between). Worker 0 running
// many leaves is the event that gives worker 1 time.
TEST_P(CoreLimit, AWorkerPastTheLimitStopsAtItsNextStrandBoundary) {
  promptly::runtime rt(config(2, GetParam(), 2));
  watchdog guard(30s, "a busy worker past the core limit under " + GetParam(), [&] { return describe(rt); });
  struct endless_tree {
    std::atomic<bool> stop{false};
    std::atomic<bool> limited{false};
    std::atomic<long> before_limit[2] = {0, 0};
    std::atomic<long> after_limit[2] = {0, 0};
    long grow(int depth) {
      if (stop.load(std::memory_order_relaxed)) return 0;
      if (depth == 0) {
        const unsigned w = promptly::detail::current_worker()->index;
        (limited.load(std::memory_order_acquire) ? after_limit : before_limit)[w].fetch_add(1, std::memory_order_relaxed);
        return 1;
      }
      auto [a, b] = promptly::join([&] { return grow(depth - 1); }, [&] { return grow(depth - 1); });
      return a + b;
    }
  } tree;
  auto root = rt.submit(promptly::level{0}, [&] {
    long leaves = 0;
    while (!tree.stop.load()) leaves += tree.grow(24);
    return leaves;
  });
  ASSERT_TRUE(wait_until([&] { return tree.before_limit[1].load() > 0; })) << "worker 1 never joined the tree";
  rt.set_core_limit(1);
  tree.limited.store(true, std::memory_order_release);
  ASSERT_TRUE(wait_until([&] { return tree.after_limit[0].load() >= static_cast<long>(scaled(50'000, 10)); }));
  tree.stop.store(true);
  EXPECT_GT(root.get(), 0);
  EXPECT_LE(tree.after_limit[1].load(), 2) << "worker 1 ran leaves past the core limit";
  rt.set_core_limit(0);
  rendezvous(rt, promptly::level{0});  // both workers serve again
}

INSTANTIATE_TEST_SUITE_P(Policies, CoreLimit, ::testing::Values("oblivious", "prompt", "aps", "fair", "equi", "drep",
                                                                 "drep-steal-boundary", "asteal", "elastic"));

TEST(CoreLimitUserPolicy, APolicySeesOnlyTheUsableCores) {
  promptly::runtime rt(config(3, "prompt", 2));
  auto owned = std::make_unique<every_core_to_the_top>();
  every_core_to_the_top* policy = owned.get();
  rt.set_policy(std::move(owned));
  EXPECT_EQ(policy->cores_seen.load(), 3u);
  rt.set_core_limit(2);
  EXPECT_EQ(policy->cores_seen.load(), 2u);
  wait_until_asleep_from(rt, 2);
  thread_log log;
  EXPECT_EQ(rt.submit([&] { return logged_tree(12, log); }).get(), 4096);
  EXPECT_LE(log.seen.size(), 2u);
  rt.set_core_limit(0);
  EXPECT_EQ(policy->cores_seen.load(), 3u);
}

TEST(CoreLimitBadInput, MoreCoresThanWorkersIsAClearError) {
  promptly::runtime rt(config(2, "prompt"));
  try {
    rt.set_core_limit(3);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the runtime's 2 workers"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rt.core_limit(), 0u);
  rt.set_core_limit(2);  // every worker: allowed
  EXPECT_EQ(rt.submit([] { return fib(10); }).get(), fib_serial(10));
}
