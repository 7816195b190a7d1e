// Table-driven tests of APS (I-Cilk's Fig. 1 desire, top-down allotment
// with leftovers), in Promptly's variant and in the paper's exact rule
// (aps_params::exact), and of the policies' decisions, through the
// runtime's own decision object (tests/policy_support.hpp); then aps exact
// in a running runtime.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

#include "policy/aps.hpp"
#include "policy_support.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;

using namespace promptly::policy_impl;
using promptly::ext::event_kind;
using promptly::ext::pool_view;
using policy_support::decisions;

struct desire_case {
  const char* what;
  bool ready;
  double prev_desire;
  unsigned prev_allot;
  double util;
  double expect;
  desire_rule rule;
};

TEST(ApsDesire, EveryBranchOfFigure1) {
  const double delta = 0.9, rho = 2.0;
  const desire_case cases[] = {
      {"line 1: no ready work", false, 4, 4, 1.0, 0, desire_rule::no_ready_work},
      {"line 2: restart from 0", true, 0, 0, 0.0, 1, desire_rule::restart},
      {"lines 3-4: inefficient halves", true, 4, 4, 0.5, 2, desire_rule::inefficient},
      {"lines 3-4: inefficient never below 1", true, 1.5, 1, 0.2, 1, desire_rule::inefficient},
      {"lines 5-6: efficient and satisfied grows", true, 2, 2, 0.95, 4, desire_rule::efficient_satisfied},
      {"line 5: satisfied means floor(d) workers", true, 2.5, 2, 0.95, 5, desire_rule::efficient_satisfied},
      {"line 7: efficient and deprived keeps", true, 4, 2, 0.99, 4, desire_rule::efficient_deprived},
      {"no worker last quantum keeps (deprived)", true, 3, 0, 0.0, 3, desire_rule::efficient_deprived},
      {"utilization exactly delta is efficient", true, 2, 2, 0.9, 4, desire_rule::efficient_satisfied},
  };
  for (const auto& c : cases) {
    const desire_result r = next_desire(c.ready, c.prev_desire, c.prev_allot, c.util, delta, rho);
    EXPECT_DOUBLE_EQ(r.desire, c.expect) << c.what;
    EXPECT_EQ(r.rule, c.rule) << c.what;
  }
  EXPECT_DOUBLE_EQ(next_desire(true, 2, 2, 1.0, 0.9, 1.5).desire, 3.0);  // rho scales growth
}

// Not in Fig. 1 (aps.hpp): the floor under a stalled pool's desire for one quantum.
TEST(ApsDesire, AStalledPoolAsksForOneCoreMoreForOneQuantum) {
  EXPECT_DOUBLE_EQ(stall_floor(true, 1), 2.0) << "one core more than it had";
  EXPECT_DOUBLE_EQ(stall_floor(true, 3), 4.0);
  EXPECT_DOUBLE_EQ(stall_floor(true, 0), 0.0) << "no core in q-1: deprived, not stalled";
  EXPECT_DOUBLE_EQ(stall_floor(false, 2), 0.0) << "not stalled: no floor";
}

struct allot_case {
  const char* what;
  std::vector<double> desires;
  std::vector<bool> ready;
  unsigned workers;
  std::vector<unsigned> expect;
};

TEST(ApsAllotment, TopDownCappedWithLeftovers) {
  const allot_case cases[] = {
      {"most urgent first, capped by P", {8, 4, 2}, {true, true, true}, 4, {4, 0, 0}},
      {"top-down fill", {1, 2, 8}, {true, true, true}, 8, {1, 2, 5}},
      {"leftovers: half of the remainder from the top, the rest to the last", {1, 1, 0}, {true, true, false}, 8, {4, 4, 0}},
      {"leftovers over three levels", {1, 1, 1}, {true, true, true}, 11, {5, 3, 3}},
      {"leftovers skip levels without work", {0, 1, 0}, {false, true, false}, 4, {0, 4, 0}},
      {"fractional desires count whole workers", {1.5, 2.9}, {true, true}, 8, {4, 4}},
      {"no work anywhere: nobody is allotted", {0, 0}, {false, false}, 4, {0, 0}},
      {"odd remainder rounds up at the top", {1, 1, 1}, {true, true, true}, 6, {3, 2, 1}},
  };
  for (const auto& c : cases) {
    std::vector<unsigned> out(c.desires.size(), 99);
    std::vector<pool_view> stats(c.ready.size());
    for (std::size_t i = 0; i < c.ready.size(); ++i) stats[i].has_ready_work = c.ready[i];
    allot_top_down(c.desires, stats, c.workers, out);
    EXPECT_EQ(out, c.expect) << c.what;
    unsigned sum = 0;
    for (unsigned a : out) sum += a;
    EXPECT_LE(sum, c.workers) << c.what;
  }
}

// Fig. 1 as written (aps_params::exact): every branch, and next to it what
// Promptly's variant decides for the same input where the two differ.
TEST(ApsDesireExact, EveryBranchOfFigure1AsWritten) {
  const double delta = 0.9, rho = 2.0;
  struct exact_case {
    const char* what;
    bool ready;
    double prev_desire;
    unsigned prev_allot;
    double util;
    double expect;
    desire_rule rule;
    double variant;  // next_desire for the same input
  };
  const exact_case cases[] = {
      {"line 1: no ready work", false, 4, 4, 1.0, 0, desire_rule::no_ready_work, 0},
      {"line 2: restart from 0", true, 0, 0, 0.0, 1, desire_rule::restart, 1},
      {"lines 3-4: inefficient halves", true, 4, 4, 0.5, 2, desire_rule::inefficient, 2},
      {"lines 3-4: no floor of 1", true, 1.5, 1, 0.2, 0.75, desire_rule::inefficient, 1},
      {"lines 3-4: from 1 to below 1", true, 1, 1, 0.5, 0.5, desire_rule::inefficient, 1},
      {"no worker, desire below 1: every step complete, satisfied: grows", true, 0.5, 0, 0.0, 1.0,
       desire_rule::efficient_satisfied, 0.5},
      {"no worker, desire below 1 grows whatever the utilization reads", true, 0.25, 0, 0.3, 0.5,
       desire_rule::efficient_satisfied, 0.25},
      {"no worker, desire >= 1: efficient and deprived keeps", true, 3, 0, 0.0, 3, desire_rule::efficient_deprived, 3},
      {"lines 5-6: efficient and satisfied grows", true, 2, 2, 0.95, 4, desire_rule::efficient_satisfied, 4},
      {"line 5: satisfied means floor(d) workers", true, 2.5, 2, 0.95, 5, desire_rule::efficient_satisfied, 5},
      {"line 5: a leftover worker above a desire below 1 is satisfied", true, 0.5, 1, 0.95, 1.0,
       desire_rule::efficient_satisfied, 1.0},
      {"line 7: efficient and deprived keeps", true, 4, 2, 0.99, 4, desire_rule::efficient_deprived, 4},
      {"utilization exactly delta is efficient", true, 2, 2, 0.9, 4, desire_rule::efficient_satisfied, 4},
  };
  for (const auto& c : cases) {
    const desire_result r = next_desire_exact(c.ready, c.prev_desire, c.prev_allot, c.util, delta, rho);
    EXPECT_DOUBLE_EQ(r.desire, c.expect) << c.what;
    EXPECT_EQ(r.rule, c.rule) << c.what;
    EXPECT_DOUBLE_EQ(next_desire(c.ready, c.prev_desire, c.prev_allot, c.util, delta, rho).desire, c.variant)
        << "variant: " << c.what;
  }
  EXPECT_DOUBLE_EQ(next_desire_exact(true, 3, 3, 0.1, 0.9, 1.5).desire, 2.0);  // rho scales the fall
}

TEST(ApsAllotmentExact, TopDownThenHalfOfTheLeftoversToEveryLevelFromTheTop) {
  struct exact_allot_case {
    const char* what;
    std::vector<double> desires;
    unsigned workers;
    std::vector<unsigned> expect;
  };
  const exact_allot_case cases[] = {
      {"most urgent first, capped by P", {8, 4, 2}, 4, {4, 0, 0}},
      {"top-down fill", {1, 2, 8}, 8, {1, 2, 5}},
      {"leftovers go from the top whatever has work", {0, 1, 0}, 4, {2, 2, 0}},
      {"nothing anywhere: every worker is still allotted", {0, 0}, 4, {2, 2}},
      {"the last level takes what is left", {0, 0, 0}, 8, {4, 2, 2}},
      {"desires below 1 give 0 workers from the top-down pass", {0.5, 0.5}, 2, {1, 1}},
      {"the level with the only work can get none", {0, 0, 0.5}, 2, {1, 1, 0}},
      {"odd remainder rounds up at the top", {1, 1, 1}, 6, {3, 2, 1}},
      {"fractional desires count whole workers", {1.5, 2.9}, 8, {4, 4}},
      {"one level", {0.7}, 3, {3}},
  };
  for (const auto& c : cases) {
    std::vector<unsigned> out(c.desires.size(), 99);
    allot_top_down_exact(c.desires, c.workers, out);
    EXPECT_EQ(out, c.expect) << c.what;
    unsigned sum = 0;
    for (unsigned a : out) sum += a;
    EXPECT_EQ(sum, c.workers) << "every worker is allotted: " << c.what;
  }
  std::vector<unsigned> none;
  allot_top_down_exact({}, 4, none);  // no pools: nothing to do, no crash
}

namespace {
std::unique_ptr<promptly::ext::policy> aps_exact(std::chrono::microseconds quantum = 500us) {
  promptly::ext::aps_params params;
  params.exact = true;
  params.quantum = quantum;
  return promptly::ext::make_policy("aps", params);
}
}  // namespace

TEST(Policies, ApsExactOnlyTicksChangeTheAllotment) {
  auto p = aps_exact();
  EXPECT_TRUE(p->ticks_while_one_pool_is_busy());
  EXPECT_FALSE(promptly::ext::make_policy("aps")->ticks_while_one_pool_is_busy());
  decisions d(2);
  std::vector<pool_view> s(3);
  const auto none = promptly::ext::no_pool;
  // Nothing anywhere: the leftovers still go out from the top.
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::installed, none, s), (std::vector<unsigned>{1, 1, 0}));
  // Work at level 2 waits for the next quantum.
  s[2].has_ready_work = true;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_nonempty, 2, s), (std::vector<unsigned>{1, 1, 0}));
  EXPECT_DOUBLE_EQ(p->desire(2), 0.0);
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::quantum, none, s), (std::vector<unsigned>{1, 0, 1}));  // restart at 1
  EXPECT_DOUBLE_EQ(p->desire(2), 1.0);
  // An inefficient quantum takes level 2 below 1: no worker for it.
  s[2].work_s = 0.00025;
  s[2].look_s = 0.00025;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::quantum, none, s), (std::vector<unsigned>{1, 1, 0}));
  EXPECT_DOUBLE_EQ(p->desire(2), 0.5);
  // A quantum with no worker is efficient and, below 1, satisfied: it grows back.
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::quantum, none, s), (std::vector<unsigned>{1, 0, 1}));
  EXPECT_DOUBLE_EQ(p->desire(2), 1.0);
  s[2].look_s = 0;
  s[2].work_s = 0.0005;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::quantum, none, s), (std::vector<unsigned>{0, 0, 2}));
  EXPECT_DOUBLE_EQ(p->desire(2), 2.0);
  // Mid-quantum events change nothing, desires included.
  s[0].has_ready_work = true;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_nonempty, 0, s), (std::vector<unsigned>{0, 0, 2}));
  s[2].has_ready_work = false;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_empty, 2, s), (std::vector<unsigned>{0, 0, 2}));
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::more_cores_requested, 1, s), (std::vector<unsigned>{0, 0, 2}));
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::pool_added, 1, s), (std::vector<unsigned>{0, 0, 2}));
  EXPECT_DOUBLE_EQ(p->desire(0), 0.0);
  EXPECT_DOUBLE_EQ(p->desire(2), 2.0);
  // The tick: level 0 restarts at 1 and takes the leftover; level 2 gives back.
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::quantum, none, s), (std::vector<unsigned>{2, 0, 0}));
  EXPECT_DOUBLE_EQ(p->desire(0), 1.0);
  EXPECT_DOUBLE_EQ(p->desire(2), 0.0);
}

TEST(Policies, ApsVariantReactsAtOnceWhereExactWaits) {
  auto p = promptly::ext::make_policy("aps");
  decisions d(2);
  std::vector<pool_view> s(3);
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::installed, promptly::ext::no_pool, s), (std::vector<unsigned>{0, 0, 0}));
  s[2].has_ready_work = true;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_nonempty, 2, s), (std::vector<unsigned>{0, 0, 2}));
  EXPECT_DOUBLE_EQ(p->desire(2), 1.0);
}

TEST(Policies, ApsExactRemovedPoolsCoresSleepUntilTheNextQuantum) {
  auto p = aps_exact();
  decisions d(2);
  auto s = policy_support::pools_with({false, true});
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::installed, promptly::ext::no_pool, s), (std::vector<unsigned>{1, 1}));
  EXPECT_DOUBLE_EQ(p->desire(1), 1.0);
  const std::vector<pool_view> only_0(s.begin(), s.begin() + 1);
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::pool_removed, 1, only_0), (std::vector<unsigned>{1}));
  EXPECT_EQ(d.asleep(), 1u) << "the removed pool's core goes idle, not to pool 0";
  EXPECT_DOUBLE_EQ(p->desire(1), 0.0) << "a reused id starts from desire 0";
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::quantum, promptly::ext::no_pool, only_0), (std::vector<unsigned>{2}));
  EXPECT_EQ(d.asleep(), 0u);
}

TEST(Policies, PromptGivesEveryoneToTheMostUrgentNonEmptyLevel) {
  auto p = promptly::ext::make_policy("prompt");
  decisions d(4);
  std::vector<pool_view> s(3);
  EXPECT_EQ(d.decide(*p, event_kind::installed, promptly::ext::no_pool, s), (std::vector<unsigned>{4, 0, 0}));
  s[1].has_ready_work = s[2].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 1, s), (std::vector<unsigned>{0, 4, 0}));
  s[0].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 0, s), (std::vector<unsigned>{4, 0, 0}));
}

TEST(Policies, ApsReactsToEventsAtOnceAndToQuanta) {
  promptly::ext::aps_params params;
  auto p = promptly::ext::make_policy("aps", params);
  decisions d(2);
  std::vector<pool_view> s(2);
  d.decide(*p, event_kind::installed, promptly::ext::no_pool, s);
  EXPECT_EQ(d.quantum(), params.quantum);
  s[1].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 1, s), (std::vector<unsigned>{0, 2}));  // desire 1 plus the leftover
  EXPECT_DOUBLE_EQ(p->desire(1), 1.0);
  s[0].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 0, s), (std::vector<unsigned>{1, 1}));  // level 0 takes one at once
  // A quantum in which level 0 used its worker fully: its desire doubles.
  s[0].work_s = 0.0005;
  s[0].cores = 1;
  s[1].work_s = 0.0005;
  s[1].cores = 1;
  EXPECT_EQ(d.decide(*p, event_kind::quantum, promptly::ext::no_pool, s), (std::vector<unsigned>{2, 0}));
  EXPECT_DOUBLE_EQ(p->desire(0), 2.0);
  s[0].has_ready_work = false;
  EXPECT_EQ(d.decide(*p, event_kind::became_empty, 0, s), (std::vector<unsigned>{0, 2}));
  EXPECT_DOUBLE_EQ(p->desire(0), 0.0);
}

// Not in Fig. 1 (aps.hpp): the backlog floor, for the decision at hand only.
TEST(ApsDesire, ABackloggedPoolAsksForOneCoreMore) {
  EXPECT_DOUBLE_EQ(backlog_floor(1, 1), 2.0) << "one core more than it has";
  EXPECT_DOUBLE_EQ(backlog_floor(5, 2), 3.0) << "one more, whatever the queue's length";
  EXPECT_DOUBLE_EQ(backlog_floor(0, 1), 0.0) << "nothing queued: no floor";
  EXPECT_DOUBLE_EQ(backlog_floor(3, 0), 0.0) << "no core: its desire asks for one already";
}

TEST(Policies, ApsGivesTheMostUrgentBackloggedPoolOneCoreMoreAtEveryDecision) {
  auto p = promptly::ext::make_policy("aps");
  decisions d(3);
  std::vector<pool_view> s(3);
  for (auto& v : s) v.has_ready_work = true;
  d.decide_with_cores(*p, event_kind::installed, promptly::ext::no_pool, s);
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_nonempty, 2, s), (std::vector<unsigned>{1, 1, 1}));
  // Level 1 has tasks waiting: at the next decision, whatever its event, it takes a core of
  // level 2; its desire stays 1.
  s[1].queued = 4;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_nonempty, 2, s), (std::vector<unsigned>{1, 2, 0}));
  EXPECT_DOUBLE_EQ(p->desire(1), 1.0);
  // Level 0 too: only the most urgent backlogged pool gets the floor (one core moves).
  s[0].queued = 1;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_nonempty, 2, s), (std::vector<unsigned>{2, 1, 0}));
  // The queues drained: the floor is gone at the next decision.
  s[0].queued = s[1].queued = 0;
  EXPECT_EQ(d.decide_with_cores(*p, event_kind::became_nonempty, 2, s), (std::vector<unsigned>{1, 1, 1}));
  // The paper's rule has no floor: queued work changes none of its allotments.
  promptly::ext::aps_params exact;
  exact.exact = true;
  auto with_queue = promptly::ext::make_policy("aps", exact), without = promptly::ext::make_policy("aps", exact);
  decisions dq(3), dn(3);
  std::vector<pool_view> queued = s;
  queued[1].queued = 4;
  for (const auto kind : {event_kind::installed, event_kind::quantum, event_kind::became_nonempty, event_kind::quantum})
    EXPECT_EQ(dq.decide_with_cores(*with_queue, kind, promptly::ext::no_pool, queued),
              dn.decide_with_cores(*without, kind, promptly::ext::no_pool, s));
}

TEST(Policies, ObliviousGivesEveryCoreEveryPoolAndKeepsIt) {
  auto p = promptly::ext::make_policy("oblivious");
  decisions d(3);
  std::vector<pool_view> s(2);
  d.decide(*p, event_kind::installed, promptly::ext::no_pool, s);
  EXPECT_TRUE(d.all_serve_every_pool());
  s[1].has_ready_work = true;
  d.decide(*p, event_kind::became_nonempty, 1, s);
  d.decide(*p, event_kind::pool_added, 1, s);
  EXPECT_TRUE(d.all_serve_every_pool());
}

TEST(Policies, UnknownNamesAndBadParametersAreRejected) {
  EXPECT_THROW(promptly::ext::make_policy("fastest"), std::invalid_argument);
  promptly::ext::aps_params bad;
  bad.rho = 1.0;
  EXPECT_THROW(promptly::ext::make_policy("aps", bad), std::invalid_argument);
  bad = {};
  bad.delta = 0;
  EXPECT_THROW(promptly::ext::make_policy("aps", bad), std::invalid_argument);
}

// --- aps exact in a running runtime ------------------------------------------

namespace {

promptly::runtime_config exact_config(unsigned workers, unsigned levels) {
  promptly::runtime_config c = config(workers, "aps", levels);
  c.aps.exact = true;
  return c;
}

// Waits for `f` (the hang guard turns a task that never runs into a failure
// that shows where every worker is), then returns its value.
template <class T>
T value_of(promptly::runtime& rt, promptly::future<T>& f, const char* what) {
  if (!wait_until([&] { return f.is_ready(); })) ADD_FAILURE() << what << " never completed\n" << describe(rt);
  return f.get();
}

// A level kept busy with join trees until `stop`; `rounds` counts the trees done.
auto busy_level(const std::atomic<bool>& stop, std::atomic<long>& rounds) {
  return [&stop, &rounds] {
    long sum = 0;
    while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a flag; join's synchronisation orders the rest
      sum += fib(12);
      rounds.fetch_add(1, std::memory_order_relaxed);  // relaxed: a progress count read by the test thread
    }
    return sum;
  };
}

}  // namespace

namespace {

// aps with desires that barely grow (rho just above 1): only the stall rule (aps.hpp) can give
// a level a second core.
std::unique_ptr<promptly::ext::policy> slow_growth_aps() {
  promptly::aps_params p;
  p.rho = 1.000001;
  return promptly::ext::make_policy("aps", p);
}

// Level 0 stalled: a task holds its core, spinning until a second level-0 task, queued behind
// it, runs.
struct stalled_level {
  std::atomic<bool> spinning{false}, released{false};
  promptly::future<void> holder, release;

  // Submits the holder, waits until it spins, then queues the releaser. False if the holder
  // never ran (it ends at once if it runs later).
  bool start(promptly::runtime& rt) {
    holder = rt.submit(promptly::level{0}, [this] {
      spinning.store(true);
      while (!released.load(std::memory_order_relaxed)) {  // relaxed: a flag; the futures order the rest
      }
    });
    if (!wait_until([&] { return spinning.load(); })) {
      released = true;
      return false;
    }
    release = rt.submit(promptly::level{0}, [this] { released.store(true, std::memory_order_relaxed); });
    return true;
  }
  // Waits for the queued task to run; then lets the holder end either way and joins both.
  bool resolved() {
    const bool ran = wait_until([&] { return release.is_ready(); });
    released = true;
    holder.get();
    release.get();
    return ran;
  }
};

}  // namespace

// Level 0's only core is held by a task that spins until a second level-0
// task runs; that task waits queued. Desire growth cannot free it: rho is
// so close to 1 that the desire would need ages to reach 2. Only the stall
// rule (aps.hpp) gives level 0 a second core, taken from the busy level 1.
// On a shared machine the same holds when the OS takes level 0's core.
TEST(ApsRuntime, AStalledLevelGetsACoreFromALessUrgentOne) {
  promptly::runtime rt(config(2, "aps", 2));
  rt.set_policy(slow_growth_aps());
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  auto bg = rt.submit(promptly::level{1}, busy_level(stop, rounds));
  ASSERT_TRUE(wait_until([&] { return rounds.load() > 0; })) << describe(rt);
  stalled_level stall;
  ASSERT_TRUE(stall.start(rt)) << describe(rt);
  EXPECT_TRUE(stall.resolved()) << "the queued level-0 task never got a core\n" << describe(rt);
  stop = true;
  const long sum = bg.get();
  EXPECT_EQ(sum, 144 * rounds.load());
}

// The stall rule under attack: level 0's only core is held and its second task waits (a stall)
// while level 1 flips empty/non-empty with small jobs and the policy switches between the
// variant, the paper's rule and prompt and back. Every task runs, whichever policy holds at the
// moment, and the stall left behind by one policy (stall_floor_ lives in the policy object) does
// not survive into the next.
TEST(ApsRuntime, AStallAcrossPolicySwitchesAndFlippingLevelsLosesNothing) {
  promptly::runtime rt(config(2, "aps", 3));
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  auto bg = rt.submit(promptly::level{2}, busy_level(stop, rounds));
  const int cycles = under_tsan ? 3 : 12;
  for (int c = 0; c < cycles; ++c) {
    rt.set_policy(slow_growth_aps());
    stalled_level stall;
    ASSERT_TRUE(stall.start(rt)) << "cycle " << c << "\n" << describe(rt);
    for (int j = 0; j < 4; ++j) {  // level 1 flips while level 0 is stalled
      auto small = rt.submit(promptly::level{1}, [] { return fib(10); });
      if (j == 1) rt.set_policy(c % 2 == 0 ? "prompt" : "aps");  // "aps" is cfg.aps: the variant
      if (j == 2) rt.set_policy(slow_growth_aps());
      const bool ran = wait_until([&] { return small.is_ready(); });
      if (!ran) stall.released = true;
      ASSERT_TRUE(ran) << "a level-1 job never ran, cycle " << c << " job " << j << "\n" << describe(rt);
      EXPECT_EQ(small.get(), 55);
    }
    EXPECT_TRUE(stall.resolved()) << "the stalled level-0 task never ran, cycle " << c << "\n" << describe(rt);
  }
  stop = true;
  const long sum = bg.get();
  EXPECT_EQ(sum, 144 * rounds.load());
}

TEST(ApsExactRuntime, JoinTreesAtTwoLevelsAllComplete) {
  promptly::runtime rt(exact_config(2, 2));
  const int n = under_tsan ? 14 : 20;
  std::vector<promptly::future<long>> fs;
  for (int round = 0; round < 6; ++round)
    for (unsigned l = 0; l < 2; ++l) fs.push_back(rt.submit(promptly::level{l}, [n] { return fib(n); }));
  for (auto& f : fs) EXPECT_EQ(value_of(rt, f, "a fib tree"), fib_serial(n));
}

// The paper's desires keep evolving while one level runs alone: the policy
// asks for it (ticks_while_one_pool_is_busy) and the runtime keeps ticking.
// Under the variant the ticks stop with a single busy level.
TEST(ApsExactRuntime, QuantaContinueWhileOneLevelIsBusy) {
  promptly::runtime rt(exact_config(2, 2));
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  auto bg = rt.submit(promptly::level{1}, busy_level(stop, rounds));
  ASSERT_TRUE(wait_until([&] { return rounds.load() > 0; })) << describe(rt);
  const auto q0 = rt.stats().quanta;
  const bool ticking = wait_until([&] { return rt.stats().quanta >= q0 + 5; });
  stop = true;
  (void)value_of(rt, bg, "the busy level");
  EXPECT_TRUE(ticking) << "no quantum ticks while only level 1 had work";
}

// Level 0 gets a small join tree, runs empty, gets the next one, ... while
// level 1 is busy: every flip waits at most for a quantum (no re-allotment
// mid-quantum), and nothing is lost. Then the same with level 1 idle, when
// the ticks may have stopped between jobs: the job's arrival restarts them.
TEST(ApsExactRuntime, ALevelThatFlipsEmptyAndNonEmptyRepeatedly) {
  promptly::runtime rt(exact_config(2, 2));
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  auto bg = rt.submit(promptly::level{1}, busy_level(stop, rounds));
  const int jobs = under_tsan ? 10 : 60;
  for (int i = 0; i < jobs; ++i) {
    auto job = rt.submit(promptly::level{0}, [] { return fib(12); });
    ASSERT_EQ(value_of(rt, job, "a level-0 job under a busy level 1"), 144) << "job " << i;
  }
  stop = true;
  const long sum = value_of(rt, bg, "the busy level");  // before reading rounds: the task has ended
  EXPECT_EQ(sum, 144 * rounds.load());
  for (int i = 0; i < jobs / 2; ++i) {
    auto job = rt.submit(promptly::level{i % 2 == 0 ? 0u : 1u}, [] { return fib(12); });
    ASSERT_EQ(value_of(rt, job, "a job on an idle runtime"), 144) << "job " << i;
  }
}

// Three levels on two workers: with no desire anywhere the leftovers go to
// levels 0 and 1, so work at level 2 has no worker until the next quantum
// (the paper's rule). It must then run: every job completes.
TEST(ApsExactRuntime, WorkAtALevelWithoutWorkersRunsAtTheNextQuantum) {
  promptly::runtime rt(exact_config(2, 3));
  const int jobs = under_tsan ? 5 : 30;
  for (int i = 0; i < jobs; ++i) {
    // Once the previous job's level ran empty, a tick takes its worker away.
    ASSERT_TRUE(wait_until([&] { return rt.stats().levels[2].allotted == 0; })) << describe(rt);
    auto job = rt.submit(promptly::level{2}, [] { return fib(10); });
    ASSERT_EQ(value_of(rt, job, "a level-2 job"), 55) << "job " << i;
  }
  EXPECT_GT(rt.stats().levels[2].tasks_run, 0u);
}

// Switching between the paper's rule (the runtime's configuration,
// set_policy("aps")) and Promptly's variant (a policy object) while a
// background level runs and urgent work comes and goes.
TEST(ApsExactRuntime, SwitchingExactAndVariantWhileWorkRuns) {
  promptly::runtime rt(exact_config(2, 3));
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  auto bg = rt.submit(promptly::level{2}, busy_level(stop, rounds));
  const int switches = under_tsan ? 4 : 20;
  for (int i = 0; i < switches; ++i) {
    if (i % 2 == 0)
      rt.set_policy(promptly::ext::make_policy("aps"));  // the variant
    else
      rt.set_policy("aps");  // cfg.aps: exact
    EXPECT_EQ(rt.policy(), "aps");
    auto urgent = rt.submit(promptly::level{i % 2 == 0 ? 0u : 1u}, [] { return fib(14); });
    EXPECT_EQ(value_of(rt, urgent, "an urgent job"), 377) << "switch " << i;
  }
  // The background still gets workers after the last switch (to exact).
  const long so_far = rounds.load();
  EXPECT_TRUE(wait_until([&] { return rounds.load() > so_far; })) << "the background never ran again\n" << describe(rt);
  stop = true;
  const long sum = value_of(rt, bg, "the background");  // before reading rounds: the task has ended
  EXPECT_EQ(sum, 144 * rounds.load());
}
