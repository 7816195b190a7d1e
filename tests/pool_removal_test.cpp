// Removing a pool while tasks still make work for it: a remover running as
// a task parks (its worker is free to serve the pool it waits for), and a
// task still running in the closing pool may start a graph run there, like
// the other work a running task makes (async, task_group, runtime::run);
// and removal waits for work its task left in deques, stolen or mugged.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "sched/chaos.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using namespace std::chrono_literals;

namespace {

// The runtime's default policy when `policy` is empty.
promptly::runtime_config removal_config(const std::string& policy) {
  promptly::runtime_config c;
  c.workers = 2;
  if (!policy.empty()) c.policy = policy;
  return c;
}

std::string policy_label(const ::testing::TestParamInfo<std::string>& info) {
  if (info.param.empty()) return "default";
  std::string s = info.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

}  // namespace

class RemovalFromATask : public ::testing::TestWithParam<std::string> {};

// A task of level 0 spawns a child into pool p and removes p. Nothing of p
// is counted (the child belongs to its parent's task_group), so removal
// waits for p to hold no work; the remover's worker is the only one at the
// most urgent busy pool, so under prompt, equi and drep p gets a core only
// once the remover's fiber parks and level 0 looks idle.
TEST_P(RemovalFromATask, AChildSpawnedIntoThePoolRunsWhileTheRemoverParks) {
  promptly::runtime rt(removal_config(GetParam()));
  watchdog guard(10s, "remove_pool from a task under " + rt.policy(), [&] { return describe(rt); });
  for (int round = 0; round < 20; ++round) {
    const promptly::pool p = rt.create_pool({.rank = static_cast<unsigned>(round % 2)});
    std::atomic<long> child_result{0};
    auto remover = rt.submit(promptly::level{0}, [&] {
      promptly::task_group tg;
      // The child forks and joins, so it may also park in p while removal waits.
      tg.spawn(p, [&] { child_result.store(fib(12)); });
      rt.remove_pool(p);
      const long seen = child_result.load();
      tg.wait();
      return seen;
    });
    EXPECT_EQ(remover.get(), fib_serial(12)) << "remove_pool returned before the child in the pool ran";
  }
  EXPECT_EQ(rt.pool_count(), rt.config().levels);
}

INSTANTIATE_TEST_SUITE_P(Policies, RemovalFromATask, ::testing::Values("", "prompt", "equi", "drep"), policy_label);

namespace {
// Overwrites the stack below the caller's frame, where the frame of a
// function it just returned from (remove_pool's, with its wait event) was.
[[gnu::noinline]] void scribble_below_caller() {
  volatile unsigned char scratch[4096];
  for (auto& b : scratch) b = 0xA5;
}
}  // namespace

// remove_pool's wait event lives on the remover's fiber stack. The waiter is
// published before the event's last check, so a worker leaving the pool can
// wake the remover in between; the remover returns, its frame is reused
// (scribbled here), and the check must not read the event any more. A fault
// injection (chaos.hpp) holds the check until the remover was woken; before
// the check stopped reading the event it read the scribbled reference and
// crashed (and UBSan reported a member call through it in pool_test.cpp's
// churn test).
TEST(PoolRemoval, TheRemoverResumingAtOnceEndsItsWaitEventSafely) {
  // oblivious: the other worker serves p while the remover's worker is
  // still active at level 0, inside the late check.
  promptly::runtime rt(removal_config("oblivious"));
  watchdog guard(30s, "remove_pool from a task with late checks", [&] { return describe(rt); });
  struct late_checks {
    late_checks() { promptly::detail::chaos::delay_removal_checks(-1); }
    ~late_checks() { promptly::detail::chaos::delay_removal_checks(0); }
  } late;
  const int rounds = 40;
  auto remover = rt.submit(promptly::level{0}, [&] {
    for (int round = 0; round < rounds; ++round) {
      const promptly::pool p = rt.create_pool();
      // Queued or running when the remover parks; its end wakes the remover.
      auto child = rt.submit(p, [] { return fib(16); });
      rt.remove_pool(p);
      scribble_below_caller();
      if (child.get() != fib_serial(16)) return false;
    }
    return true;
  });
  EXPECT_TRUE(remover.get());
  EXPECT_EQ(rt.pool_count(), rt.config().levels);
}

// A task still running in a closing pool starts a graph run there: it is
// admitted (removal waits for it) like an async of that task, while a
// graph run of another pool's task, or from outside, into the closing pool
// is refused with pool_removed.
TEST(PoolRemoval, AGraphRunByATaskOfTheClosingPoolIsAdmitted) {
  promptly::runtime rt(config(2, "prompt"));
  watchdog guard(10s, "graph run in a closing pool", [&] { return describe(rt); });
  for (int round = 0; round < 5; ++round) {
    const promptly::pool p = rt.create_pool();
    std::atomic<bool> closing{false};
    std::atomic<bool> checked{false};  // the checks below ran while p was still closing
    std::atomic<int> graph_tasks_run{0};
    auto in_p = rt.submit(p, [&] {
      while (!refuses_work(rt, p)) promptly::yield();
      closing.store(true);
      promptly::graph g("in the closing pool");
      auto [a, b] = g.emplace([&] { graph_tasks_run.fetch_add(1); }, [&] { graph_tasks_run.fetch_add(1); });
      a.precede(b);
      promptly::graph_run r = g.run(rt);  // at the caller's pool, p
      r.get();
      promptly::graph again("named explicitly");
      again.emplace([&] { graph_tasks_run.fetch_add(1); });
      again.run(rt, promptly::level{p.id}).get();
      while (!checked.load()) promptly::yield();  // holds p open until then
      return promptly::current_pool() == p;
    });
    std::thread remover([&] { rt.remove_pool(p); });
    ASSERT_TRUE(wait_until([&] { return closing.load(); }));
    // From outside and from a task of another pool the closing pool takes no graph run.
    promptly::graph outside("from outside");
    outside.emplace([] {});
    EXPECT_THROW((void)outside.run(rt, promptly::level{p.id}), promptly::pool_removed);
    EXPECT_FALSE(outside.running()) << "a refused run leaves the graph free";
    EXPECT_TRUE(rt.submit(promptly::level{0}, [&] {
                    promptly::graph other("from level 0");
                    other.emplace([] {});
                    try {
                      (void)other.run(rt, promptly::level{p.id});
                    } catch (const promptly::pool_removed&) {
                      return true;
                    }
                    return false;
                  }).get())
        << "a task of another pool started a graph run in the closing pool";
    checked.store(true);
    EXPECT_TRUE(in_p.get());
    remover.join();
    EXPECT_EQ(graph_tasks_run.load(), 3);
  }
}

class RemovalRacingATakenChild : public ::testing::TestWithParam<std::string> {};

// A child that a task of level 0 spawns into pool p is counted nowhere in p
// (it belongs to its parent's task_group): only p's queues and workers show
// it. remove_pool, called from outside at a varying moment after the
// spawn, must not return while a worker has taken the child from p's
// injection queue and is not yet active in p: the child would then run in
// a freed pool, whose id the next round's pool takes again. Under
// randomized schedules (chaos.hpp) the worker lingers in that window.
TEST_P(RemovalRacingATakenChild, NoChildOfARemovedPoolRunsAfterRemovalReturned) {
  struct chaos_on {
    chaos_on() { promptly::detail::chaos::enable(7); }
    ~chaos_on() { promptly::detail::chaos::enable(0); }
  } chaos;
  promptly::runtime rt(removal_config(GetParam()));
  watchdog guard(30s, "remove_pool racing a taken child under " + rt.policy(), [&] { return describe(rt); });
  std::atomic<int> late{0};
  std::uint64_t delay = 0x9E3779B97F4A7C15ULL;
  for (int round = 0; round < 60; ++round) {
    const promptly::pool p = rt.create_pool();
    std::atomic<bool> spawned{false};
    std::atomic<bool> removal_returned{false};
    auto parent = rt.submit(promptly::level{0}, [&] {
      promptly::task_group tg;
      tg.spawn(p, [&] {
        if (removal_returned.load()) late.fetch_add(1);
      });
      spawned.store(true);
      tg.wait();
    });
    ASSERT_TRUE(wait_until([&] { return spawned.load(); }));
    // A varying delay (xorshift), so that removal's checks land anywhere
    // in the child's way from the queue to a worker.
    delay ^= delay << 13;
    delay ^= delay >> 7;
    delay ^= delay << 17;
    for (std::uint64_t i = 0, n = delay % 20000; i < n; ++i) (void)spawned.load();
    rt.remove_pool(p);
    removal_returned.store(true);
    parent.get();
  }
  EXPECT_EQ(late.load(), 0) << "children of removed pools ran after remove_pool returned";
  EXPECT_EQ(rt.pool_count(), rt.config().levels);
}

// oblivious: every worker takes from every pool's queue, so the child is
// taken while the remover checks most often (about a third of the rounds);
// prompt and the default policy move a core to p for the child, the path of
// a job server's pools. Alone a round takes about 0.6 ms; beside two
// CPU-bound processes on 2 cores 20-70 ms (the runtime's threads get the
// CPU at the kernel's 4 ms ticks), so the rounds are few and the guard is
// wide: 300 rounds took up to 7.4 s there and reached a 10 s guard.
INSTANTIATE_TEST_SUITE_P(Policies, RemovalRacingATakenChild, ::testing::Values("", "oblivious", "prompt"), policy_label);

class RemovalRacingAGrandchild : public ::testing::TestWithParam<std::string> {};

// Grandchildren of a pool's task wait in deques after their parents
// returned: asyncs that the task's children started and dropped (counted
// in the pool, help-first: pushed on the spawning worker's deque). Meanwhile
// thieves steal them (every worker serves p under oblivious), or the policy
// moves p's workers to an urgent burst at level 0 at their next strand
// boundary, handing their deques over as muggable for the next worker at p
// to mug (prompt and the default policy). remove_pool, called from outside
// at a varying moment once the task has returned, must return only after
// every grandchild ran, and none may start after it returned.
TEST_P(RemovalRacingAGrandchild, EveryGrandchildRunsBeforeRemovalReturns) {
  struct chaos_on {
    chaos_on() { promptly::detail::chaos::enable(11); }
    ~chaos_on() { promptly::detail::chaos::enable(0); }
  } chaos;
  promptly::runtime rt(removal_config(GetParam()));
  watchdog guard(30s, "remove_pool racing grandchildren under " + rt.policy(), [&] { return describe(rt); });
  constexpr int children = 2;
  constexpr int per_child = 4;
  std::atomic<int> late{0};
  int missing = 0;
  std::uint64_t delay = 0x2545F4914F6CDD1DULL;
  for (int round = 0; round < 60; ++round) {
    const promptly::pool p = rt.create_pool();
    std::atomic<int> ran{0};
    std::atomic<bool> removal_returned{false};
    auto parent = rt.submit(p, [&] {
      promptly::task_group tg;
      for (int c = 0; c < children; ++c)
        tg.spawn([&] {
          for (int g = 0; g < per_child; ++g)
            (void)promptly::async([&] {
              if (removal_returned.load()) late.fetch_add(1);
              ran.fetch_add(1);
            });
        });
      tg.wait();
    });
    auto urgent = rt.submit(promptly::level{0}, [] {
      for (int i = 0; i < 8; ++i) promptly::join([] {}, [] {});
    });
    parent.get();  // the task and its children returned; grandchildren may still be queued
    delay ^= delay << 13;
    delay ^= delay >> 7;
    delay ^= delay << 17;
    for (std::uint64_t i = 0, n = delay % 20000; i < n; ++i) (void)ran.load();
    rt.remove_pool(p);
    removal_returned.store(true);
    missing += children * per_child - ran.load();
    urgent.get();
  }
  EXPECT_EQ(missing, 0) << "grandchildren had not run when remove_pool returned";
  EXPECT_EQ(late.load(), 0) << "grandchildren of removed pools started after remove_pool returned";
  EXPECT_EQ(rt.pool_count(), rt.config().levels);
}

INSTANTIATE_TEST_SUITE_P(Policies, RemovalRacingAGrandchild, ::testing::Values("", "oblivious", "prompt"), policy_label);
