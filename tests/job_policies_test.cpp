// The job server's core-allocation policies (equi, drep,
// drep-steal-boundary, asteal, elastic; docs/job-policies.md): their pure
// rules table by table, their decisions through the runtime's own decision
// object (tests/policy_support.hpp), DREP's probabilities statistically
// with a fixed seed, the elastic optimiser against brute force, the class
// rule under every policy, and pools run to completion under each policy in
// a real runtime at 2 and 4 workers.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/elastic_optimizer.hpp"
#include "policy/job_classes.hpp"
#include "policy/job_policies.hpp"
#include "policy/serpt.hpp"
#include "policy_support.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "sched/chaos.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using namespace std::chrono_literals;
using namespace promptly::policy_impl;
using promptly::ext::event_kind;
using promptly::ext::no_pool;
using promptly::ext::pool_view;
using policy_support::decisions;
using counts = std::vector<unsigned>;

namespace {

using policy_support::pools_of;

unsigned sum(const counts& c) {
  unsigned s = 0;
  for (unsigned x : c) s += x;
  return s;
}

}  // namespace

// --- the shared splits and the class rule -------------------------------------

TEST(JobSplits, EqualSplitGivesTheRemainderToTheOldest) {
  EXPECT_EQ(equal_split(3, 8), (counts{3, 3, 2}));
  EXPECT_EQ(equal_split(4, 8), (counts{2, 2, 2, 2}));
  EXPECT_EQ(equal_split(1, 8), (counts{8})) << "no cap: one pool alone gets every core";
  EXPECT_EQ(equal_split(5, 2), (counts{1, 1, 0, 0, 0})) << "more pools than cores: the oldest get one each";
  EXPECT_EQ(equal_split(0, 4), (counts{}));
  EXPECT_EQ(equal_split(2, 0), (counts{0, 0}));
}

TEST(JobSplits, DynamicEquipartitioningOfDesires) {
  struct deq_case {
    const char* what;
    counts desires;
    unsigned cores;
    counts expect;
  };
  const deq_case cases[] = {
      {"everyone desires more than the share: even split", {8, 8}, 8, {4, 4}},
      {"a small desire is met, the rest goes to the other", {1, 10}, 8, {1, 7}},
      {"water filling over two passes", {2, 3, 10, 10}, 12, {2, 3, 4, 3}},
      {"every desire met leaves cores unallotted", {1, 2}, 8, {1, 2}},
      {"odd remainder to the first unsatisfied (oldest)", {5, 5, 5}, 8, {3, 3, 2}},
      {"a desire equal to the share is met", {4, 9}, 8, {4, 4}},
      {"fewer cores than pools", {3, 3, 3}, 2, {1, 1, 0}},
      {"nothing to hand out", {2, 2}, 0, {0, 0}},
  };
  for (const auto& c : cases) {
    const counts got = deq(c.desires, c.cores);
    EXPECT_EQ(got, c.expect) << c.what;
    EXPECT_LE(sum(got), c.cores) << c.what;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_LE(got[i], c.desires[i]) << c.what;
  }
}

TEST(JobSplits, ServeByRankServesTheMostUrgentClassFirst) {
  // A rule that wants 2 cores per pool: rank 0 gets its 2 x 2, rank 1 the
  // rest, rank 2 nothing; pools without work get nothing.
  const auto two_each = [](std::span<const std::size_t> members, unsigned left) {
    counts want(members.size(), 2);
    counts out(members.size(), 0);
    for (std::size_t k = 0; k < members.size(); ++k) {
      out[k] = std::min(want[k], left);
      left -= out[k];
    }
    return out;
  };
  const auto pools = pools_of({{0, true}, {0, true}, {0, false}, {1, true}, {1, true}, {2, true}});
  EXPECT_EQ(serve_by_rank(pools, 6, two_each), (counts{2, 2, 0, 2, 0, 0}));
  EXPECT_EQ(serve_by_rank(pools, 3, two_each), (counts{2, 1, 0, 0, 0, 0}));
  // A greedy rule (take everything offered) starves the classes after it.
  const auto greedy = [](std::span<const std::size_t> members, unsigned left) {
    return equal_split(members.size(), left);
  };
  EXPECT_EQ(serve_by_rank(pools, 5, greedy), (counts{3, 2, 0, 0, 0, 0}));
  // A rule that overspends is cut back to what was offered.
  const auto overspend = [](std::span<const std::size_t> members, unsigned) { return counts(members.size(), 9); };
  EXPECT_EQ(serve_by_rank(pools, 4, overspend), (counts{4, 0, 0, 0, 0, 0}));
  // Ranks need not start at 0 nor be contiguous.
  const auto sparse = pools_of({{3, true}, {7, true}});
  EXPECT_EQ(serve_by_rank(sparse, 4, two_each), (counts{2, 2}));
}

// --- equi -----------------------------------------------------------------------

TEST(Equi, EqualSharesAmongPoolsWithWorkReevaluatedOnEvents) {
  auto p = promptly::ext::make_policy("equi");
  EXPECT_EQ(p->name(), "equi");
  decisions d(8);
  auto s = pools_of({{1, false}, {1, false}, {1, false}});
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{0, 0, 0})) << "no work: every core sleeps";
  EXPECT_EQ(d.quantum(), held_core_quantum) << "equi's counts change at events; ticks only find held cores";
  s[0].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 0, s), (counts{8, 0, 0}));
  s[1].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 1, s), (counts{4, 4, 0}));
  s[2].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 2, s), (counts{3, 3, 2})) << "the remainder to the oldest";
  s[0].has_ready_work = false;
  EXPECT_EQ(d.decide(*p, event_kind::became_empty, 0, s), (counts{0, 4, 4}));
  s.erase(s.begin());
  EXPECT_EQ(d.decide(*p, event_kind::pool_removed, 0, s), (counts{4, 4}));
}

TEST(Equi, AnUrgentClassTakesEveryCore) {
  auto p = promptly::ext::make_policy("equi");
  decisions d(4);
  auto s = pools_of({{0, false}, {1, true}, {1, true}});
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{0, 2, 2}));
  s[0].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 0, s), (counts{4, 0, 0}));
  s[0].has_ready_work = false;
  EXPECT_EQ(d.decide(*p, event_kind::became_empty, 0, s), (counts{0, 2, 2}));
}

// --- drep -----------------------------------------------------------------------

TEST(Drep, TheFirstJobGetsEveryCoreAndExitsFreeCoresToTheOthers) {
  auto p = make_drep_policy();
  decisions d(4);
  auto s = pools_of({{1, false}, {1, false}});
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{0, 0}));
  s[0].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 0, s), (counts{4, 0})) << "n = 1: every core moves";
  s[1].has_ready_work = true;
  const counts two = d.decide(*p, event_kind::became_nonempty, 1, s);
  EXPECT_EQ(sum(two), 4u);
  s[0].has_ready_work = false;
  EXPECT_EQ(d.decide(*p, event_kind::became_empty, 0, s), (counts{0, 4})) << "the only unfinished job takes every freed core";
  s[1].has_ready_work = false;
  EXPECT_EQ(d.decide(*p, event_kind::became_empty, 1, s), (counts{0, 0})) << "no job: every core sleeps";
}

// Over 10^4 arrivals of a job joining n - 1 = 3 others on 8 cores, each core
// moves with probability 1/4: the fraction moved is within 0.01 of 1/4 (the
// standard error is 0.0015, so the bound is about 6.5 of them). At each
// exit the freed cores go to the 3 others uniformly: each gets a third of
// them within 0.015.
TEST(Drep, ArrivalsMoveEachCoreWithProbabilityOneOverNAndExitsPickUniformly) {
  auto p = make_drep_policy({.seed = 12345});
  const unsigned cores = 8;
  decisions d(cores);
  auto s = pools_of({{1, true}, {1, true}, {1, true}, {1, false}});
  d.decide(*p, event_kind::installed, no_pool, s);
  const int arrivals = 10'000;
  std::uint64_t moved = 0, freed = 0;
  std::vector<std::uint64_t> freed_to(3, 0);
  for (int i = 0; i < arrivals; ++i) {
    const counts before = d.decide(*p, event_kind::quantum, no_pool, s);
    s[3].has_ready_work = true;
    const counts after = d.decide(*p, event_kind::became_nonempty, 3, s);
    ASSERT_EQ(sum(after), cores);
    moved += after[3];
    for (int j = 0; j < 3; ++j) ASSERT_LE(after[j], before[j]) << "an arrival only takes cores";
    s[3].has_ready_work = false;
    const counts back = d.decide(*p, event_kind::became_empty, 3, s);
    ASSERT_EQ(back[3], 0u);
    ASSERT_EQ(sum(back), cores);
    freed += after[3];
    for (int j = 0; j < 3; ++j) freed_to[j] += back[j] - after[j];
  }
  const double fraction = static_cast<double>(moved) / (static_cast<double>(arrivals) * cores);
  EXPECT_NEAR(fraction, 0.25, 0.01);
  ASSERT_GT(freed, 0u);
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(static_cast<double>(freed_to[j]) / static_cast<double>(freed), 1.0 / 3.0, 0.015) << "job " << j;
}

TEST(Drep, TheSameSeedGivesTheSameDecisions) {
  auto run = [](std::uint64_t seed) {
    auto p = make_drep_policy({.seed = seed});
    decisions d(8);
    auto s = pools_of({{1, false}, {1, false}, {1, false}, {1, false}});
    d.decide(*p, event_kind::installed, no_pool, s);
    std::vector<counts> trace;
    for (int round = 0; round < 20; ++round)
      for (std::size_t i = 0; i < s.size(); ++i) {
        s[i].has_ready_work = !s[i].has_ready_work;
        trace.push_back(d.decide(*p, s[i].has_ready_work ? event_kind::became_nonempty : event_kind::became_empty,
                                 static_cast<promptly::ext::pool_id>(i), s));
      }
    return trace;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8)) << "the seed is used";
}

TEST(Drep, ClassesAnUrgentArrivalTakesEveryCoreAndGivesThemBack) {
  for (const char* name : {"drep", "drep-steal-boundary"}) {
    auto p = promptly::ext::make_policy(name);
    EXPECT_EQ(p->name(), name);
    decisions d(4);
    auto s = pools_of({{0, false}, {1, true}, {1, true}});
    const counts start = d.decide(*p, event_kind::installed, no_pool, s);
    EXPECT_EQ(start[0], 0u) << name;
    EXPECT_EQ(start[1] + start[2], 4u) << name;
    s[0].has_ready_work = true;
    EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 0, s), (counts{4, 0, 0})) << name;
    // A batch job arriving while the interactive one runs gets no core.
    s.push_back(pools_of({{1, true}})[0]);
    s.back().id = 3;
    EXPECT_EQ(d.decide(*p, event_kind::pool_added, 3, s), (counts{4, 0, 0, 0})) << name;
    s[0].has_ready_work = false;
    const counts back = d.decide(*p, event_kind::became_empty, 0, s);
    EXPECT_EQ(back[0], 0u) << name;
    EXPECT_EQ(back[1] + back[2] + back[3], 4u) << name << ": freed cores go to the batch jobs";
  }
}

TEST(Drep, ABatchOfEventsIsReconciledAgainstTheView) {
  // pool_added and became_nonempty of one pool handed over together on a
  // view that already shows the work: one arrival, not two.
  auto p = make_drep_policy();
  decisions d(4);
  auto s = pools_of({{1, true}});
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{4}));
  s.push_back(pools_of({{1, true}})[0]);
  s.back().id = 1;
  const counts a = d.decide(*p, event_kind::pool_added, 1, s);
  const counts b = d.decide(*p, event_kind::became_nonempty, 1, s);
  EXPECT_EQ(a, b) << "the second event of the batch moves nothing";
}

// --- asteal ---------------------------------------------------------------------

TEST(Asteal, EveryBranchOfTheDesireRule) {
  struct desire_case {
    const char* what;
    double desire;
    unsigned allotted;
    double util;
    double expect;
    asteal_rule rule;
  };
  const double delta = 0.95, rho = 2.0, cap = 8;
  const desire_case cases[] = {
      {"inefficient halves", 4, 4, 0.5, 2, asteal_rule::inefficient},
      {"inefficient never below 1", 1, 1, 0.1, 1, asteal_rule::inefficient},
      {"inefficient from 1.5 stops at 1", 1.5, 1, 0.2, 1, asteal_rule::inefficient},
      {"inefficient even when deprived", 4, 2, 0.9, 2, asteal_rule::inefficient},
      {"efficient and satisfied doubles", 2, 2, 0.99, 4, asteal_rule::efficient_satisfied},
      {"satisfied means floor(d) cores", 2.5, 2, 0.96, 5, asteal_rule::efficient_satisfied},
      {"more than desired is satisfied", 2, 5, 1.0, 4, asteal_rule::efficient_satisfied},
      {"growth stops at the core count", 8, 8, 1.0, 8, asteal_rule::efficient_satisfied},
      {"growth is cut at the core count", 6, 6, 1.0, 8, asteal_rule::efficient_satisfied},
      {"efficient and deprived keeps", 4, 2, 0.99, 4, asteal_rule::efficient_deprived},
      {"utilisation exactly delta is efficient", 2, 2, 0.95, 4, asteal_rule::efficient_satisfied},
      {"no core in the quantum keeps", 3, 0, 0.0, 3, asteal_rule::no_cores},
  };
  for (const auto& c : cases) {
    const asteal_desire r = asteal_next_desire(c.desire, c.allotted, c.util, delta, rho, cap);
    EXPECT_DOUBLE_EQ(r.desire, c.expect) << c.what;
    EXPECT_EQ(r.rule, c.rule) << c.what;
  }
  EXPECT_DOUBLE_EQ(asteal_next_desire(2, 2, 1.0, 0.95, 1.5, 8).desire, 3.0) << "rho scales growth";
  EXPECT_DOUBLE_EQ(asteal_next_desire(3, 3, 0.5, 0.95, 1.5, 8).desire, 2.0) << "rho scales shrinking";
}

TEST(Asteal, DesiresAreEquipartitionedAndFollowUtilisation) {
  auto p = make_asteal_policy({.quantum = 3ms});
  decisions d(8);
  auto s = pools_of({{1, true}, {1, true}});
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{4, 4})) << "desires 1 and 1, surplus split";
  EXPECT_EQ(d.quantum(), 3ms);
  EXPECT_DOUBLE_EQ(p->desire(0), 1.0);
  // Pool 0 used its cores fully, pool 1 mostly looked for work.
  s[0].cores = 4, s[0].work_s = 0.012, s[0].look_s = 0.0;
  s[1].cores = 4, s[1].work_s = 0.003, s[1].look_s = 0.009;
  d.decide(*p, event_kind::quantum, no_pool, s);
  EXPECT_DOUBLE_EQ(p->desire(0), 2.0);
  EXPECT_DOUBLE_EQ(p->desire(1), 1.0) << "inefficient, already at 1";
  for (int q = 0; q < 3; ++q) d.decide(*p, event_kind::quantum, no_pool, s);
  EXPECT_DOUBLE_EQ(p->desire(0), 8.0) << "2 -> 4 -> 8 -> capped at 8";
  // DEQ: pool 1 desires 1 and gets it; pool 0 the rest.
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{7, 1}));
  // A third pool arrives at desire 1: DEQ gives 6, 1, 1.
  s.push_back(pools_of({{1, true}})[0]);
  s.back().id = 2;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 2, s), (counts{6, 1, 1}));
  EXPECT_DOUBLE_EQ(p->desire(2), 1.0);
  s[0].has_ready_work = false;
  EXPECT_EQ(d.decide(*p, event_kind::became_empty, 0, s), (counts{0, 4, 4})) << "desires 1, 1: surplus split";
  EXPECT_DOUBLE_EQ(p->desire(0), 0.0);
}

TEST(Asteal, WithoutSurplusSharingNoPoolGetsMoreThanItsDesire) {
  auto p = make_asteal_policy({.share_surplus = false});
  decisions d(8);
  auto s = pools_of({{1, true}, {1, true}});
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{1, 1})) << "desires 1 and 1; six cores sleep";
  s[0].cores = 1, s[0].work_s = 0.002;
  s[1].cores = 1, s[1].work_s = 0.002;
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{2, 2}));
  s[0].cores = s[1].cores = 2;
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{4, 4}));
}

TEST(Asteal, ClassesTheUrgentClassGetsItsDesireFirst) {
  auto p = make_asteal_policy();
  decisions d(4);
  auto s = pools_of({{0, true}, {1, true}});
  d.decide(*p, event_kind::installed, no_pool, s);
  s[0].cores = 2, s[0].work_s = 1.0;
  s[1].cores = 2, s[1].work_s = 1.0;
  d.decide(*p, event_kind::quantum, no_pool, s);  // both 1 -> 2
  s[0].cores = 3;
  d.decide(*p, event_kind::quantum, no_pool, s);  // 2 -> 4 (pool 0 satisfied), pool 1 satisfied too
  EXPECT_DOUBLE_EQ(p->desire(0), 4.0);
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{4, 0})) << "rank 0 desires every core";
  s[0].work_s = 0.1, s[0].look_s = 0.9;  // rank 0's parallelism dropped
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{2, 2})) << "4 -> 2: rank 1 gets the rest";
  EXPECT_THROW(make_asteal_policy({.delta = 0}), std::invalid_argument);
  EXPECT_THROW(make_asteal_policy({.rho = 1}), std::invalid_argument);
  EXPECT_THROW(make_asteal_policy({.quantum = 0us}), std::invalid_argument);
}

// --- elastic --------------------------------------------------------------------

namespace {

// The minimum of the objective over every allotment that gives each task in
// `admitted` a count meeting its T_max (others 0), by enumeration.
double brute_force_minimum(const std::vector<elastic_task>& tasks, const std::vector<bool>& admitted, unsigned cores) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<unsigned> m(tasks.size(), 0);
  std::function<void(std::size_t, unsigned)> go = [&](std::size_t i, unsigned left) {
    if (i == tasks.size()) {
      double obj = 0;
      for (std::size_t k = 0; k < tasks.size(); ++k)
        if (admitted[k]) obj += elastic_term(tasks[k], m[k]);
      best = std::min(best, obj);
      return;
    }
    if (!admitted[i]) {
      m[i] = 0;
      go(i + 1, left);
      return;
    }
    for (unsigned c = 1; c <= left; ++c) {
      if (elastic_response_ms(tasks[i], c) > tasks[i].period_max_ms) continue;
      m[i] = c;
      go(i + 1, left - c);
    }
  };
  go(0, cores);
  return best;
}

}  // namespace

TEST(ElasticOptimiser, ResponseTimeAndFewestCores) {
  const elastic_task t{.work_ms = 100, .span_ms = 10, .period_min_ms = 20, .period_max_ms = 40, .elasticity = 1};
  EXPECT_DOUBLE_EQ(elastic_response_ms(t, 1), 100);
  EXPECT_DOUBLE_EQ(elastic_response_ms(t, 3), 40);
  EXPECT_TRUE(std::isinf(elastic_response_ms(t, 0)));
  EXPECT_EQ(elastic_min_cores(t, 16), 3u) << "T(3) = 40 = T_max exactly";
  EXPECT_EQ(elastic_min_cores(t, 2), 0u) << "not within the limit";
  const elastic_task sequential{.work_ms = 5, .span_ms = 5, .period_min_ms = 5, .period_max_ms = 5, .elasticity = 1};
  EXPECT_EQ(elastic_min_cores(sequential, 4), 1u);
  const elastic_task too_long{.work_ms = 50, .span_ms = 30, .period_min_ms = 10, .period_max_ms = 25, .elasticity = 1};
  EXPECT_EQ(elastic_min_cores(too_long, 64), 0u) << "L > T_max: no count meets it";
  // Brute force over small tasks.
  for (double c : {7.0, 30.0, 100.0})
    for (double l : {1.0, 3.0, 7.0})
      for (double tmax : {5.0, 9.0, 20.0, 120.0}) {
        if (l > c) continue;
        const elastic_task x{.work_ms = c, .span_ms = l, .period_min_ms = 1, .period_max_ms = tmax, .elasticity = 1};
        unsigned expect = 0;
        for (unsigned m = 1; m <= 12 && expect == 0; ++m)
          if (elastic_response_ms(x, m) <= tmax) expect = m;
        EXPECT_EQ(elastic_min_cores(x, 12), expect) << c << " " << l << " " << tmax;
      }
}

TEST(ElasticOptimiser, MatchesBruteForceOnSmallCases) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int feasible_cases = 0, infeasible_cases = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const auto n = static_cast<std::size_t>(1 + trial % 3);
    const unsigned cores = 1 + static_cast<unsigned>(trial % 7);
    std::vector<elastic_task> tasks(n);
    for (auto& t : tasks) {
      t.work_ms = 10 + 90 * unit(rng);
      t.span_ms = t.work_ms * (0.05 + 0.5 * unit(rng));
      t.period_min_ms = t.span_ms * (0.8 + 2 * unit(rng));
      t.period_max_ms = t.period_min_ms * (1 + 3 * unit(rng));
      t.elasticity = 0.2 + 3 * unit(rng);
    }
    const elastic_allotment a = elastic_optimise(tasks, cores);
    ASSERT_EQ(a.cores.size(), n);
    EXPECT_LE(sum(a.cores), cores);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(a.cores[i] > 0, static_cast<bool>(a.admitted[i]));
      if (a.admitted[i]) EXPECT_LE(elastic_response_ms(tasks[i], a.cores[i]), tasks[i].period_max_ms);
    }
    if (a.feasible) {
      ++feasible_cases;
      EXPECT_NEAR(a.objective, brute_force_minimum(tasks, a.admitted, cores), 1e-9) << "trial " << trial;
    } else {
      ++infeasible_cases;
      // The admission rule: in list order while the fewest cores fit.
      unsigned left = cores;
      for (std::size_t i = 0; i < n; ++i) {
        const unsigned need = elastic_min_cores(tasks[i], cores);
        const bool admit = need > 0 && need <= left;
        EXPECT_EQ(static_cast<bool>(a.admitted[i]), admit) << "trial " << trial << " task " << i;
        if (admit) left -= need;
      }
      // Among the admitted ones the allotment is still optimal.
      EXPECT_NEAR(a.objective, brute_force_minimum(tasks, a.admitted, cores), 1e-9) << "trial " << trial;
    }
  }
  EXPECT_GT(feasible_cases, 100) << "the random cases cover feasible input";
  EXPECT_GT(infeasible_cases, 20) << "and infeasible input";
}

TEST(ElasticOptimiser, SaturatedTasksLeaveCoresAndBadInputIsNamed) {
  // T(2) = 5.5 <= T_min = 6: a third core lowers nothing.
  const std::vector<elastic_task> one{{.work_ms = 10, .span_ms = 1, .period_min_ms = 6, .period_max_ms = 20, .elasticity = 1}};
  const elastic_allotment a = elastic_optimise(one, 8);
  EXPECT_EQ(a.cores, (counts{2}));
  EXPECT_DOUBLE_EQ(a.objective, 0.0);
  // The more elastic task gives way: same shape, elasticity 1 vs 4.
  const elastic_task base{.work_ms = 40, .span_ms = 4, .period_min_ms = 8, .period_max_ms = 40, .elasticity = 1};
  elastic_task soft = base;
  soft.elasticity = 4;
  const elastic_allotment b = elastic_optimise(std::vector<elastic_task>{soft, base}, 6);
  EXPECT_LT(b.cores[0], b.cores[1]) << "the elastic task stretches its period first";
  const std::vector<elastic_task> bad{base, {.work_ms = 10, .span_ms = 20, .period_min_ms = 5, .period_max_ms = 5, .elasticity = 1}};
  try {
    (void)elastic_optimise(bad, 4);
    FAIL() << "span > work accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("elastic task 1: span_ms"), std::string::npos) << e.what();
  }
  elastic_task nan = base;
  nan.elasticity = std::nan("");
  EXPECT_THROW((void)elastic_optimise(std::vector<elastic_task>{nan}, 4), std::invalid_argument);
  elastic_task endless = base;
  endless.period_max_ms = std::numeric_limits<double>::infinity();
  EXPECT_THROW((void)elastic_optimise(std::vector<elastic_task>{endless}, 4), std::invalid_argument);
}

TEST(Elastic, ElasticPoolsGetTheOptimumAndTheOthersShareTheRest) {
  auto p = promptly::ext::make_policy("elastic");
  decisions d(8);
  auto s = pools_of({{1, true}, {1, true}, {1, true}});
  // Pool 0 needs T(m) <= 10: (50 - 2)/m + 2 <= 10 -> m >= 6, saturates at T_min = 10 too.
  s[0].elastic = promptly::elastic_params{.work_ms = 50, .span_ms = 2, .period_min_ms = 10, .period_max_ms = 10, .elasticity = 1};
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{6, 1, 1}));
  EXPECT_DOUBLE_EQ(p->desire(0), 6.0);
  // Alone, an elastic pool also takes the cores that do not lower its term.
  s[1].has_ready_work = s[2].has_ready_work = false;
  EXPECT_EQ(d.decide(*p, event_kind::became_empty, 1, s), (counts{8, 0, 0}));
  // A pool whose T_max cannot be met shares the leftover like a plain pool.
  s[1].has_ready_work = true;
  s[1].elastic = promptly::elastic_params{.work_ms = 50, .span_ms = 30, .period_min_ms = 10, .period_max_ms = 20, .elasticity = 1};
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 1, s), (counts{6, 2, 0}));
  // Classes: an urgent plain pool takes everything (no cap), then the rest.
  auto c = pools_of({{0, true}, {1, true}});
  c[1].elastic = s[0].elastic;
  decisions d2(8);
  EXPECT_EQ(d2.decide(*p, event_kind::installed, no_pool, c), (counts{8, 0}));
  c[0].elastic = promptly::elastic_params{.work_ms = 8, .span_ms = 2, .period_min_ms = 4, .period_max_ms = 8, .elasticity = 1};
  EXPECT_EQ(d2.decide(*p, event_kind::pool_added, 0, c), (counts{3, 5})) << "T(3) = 4 = T_min: rank 0 needs 3";
}

// Instances are admitted earliest deadline first (release + T_max), not oldest first. On 2
// cores: an older instance with a long period that one core serves, and a newer one with a
// short period that needs both. Oldest first admitted the first and left the second one core
// (T(1) = 24 > 15: a miss); by deadline the second gets both and the first waits (its deadline
// is 40 ms away, and one core ends it in 15 ms once the other is done).
TEST(Elastic, InstancesAreAdmittedEarliestDeadlineFirst) {
  using namespace std::chrono_literals;
  auto p = promptly::ext::make_policy("elastic");
  decisions d(2);
  auto s = pools_of({{1, true}, {1, true}});
  s[0].elastic = promptly::elastic_params{.work_ms = 15, .span_ms = 0.75, .period_min_ms = 50, .period_max_ms = 50, .elasticity = 1};
  s[0].age = 10ms;
  s[1].elastic = promptly::elastic_params{.work_ms = 24, .span_ms = 1.2, .period_min_ms = 15, .period_max_ms = 15, .elasticity = 1};
  s[1].age = 0ms;
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{0, 2}));
  EXPECT_DOUBLE_EQ(p->desire(1), 2.0);
  // When the long-period instance's deadline is the nearer one (40 ms old: 10 ms left), it
  // comes first: its one core, and the other, which no longer fits, shares the core left.
  s[0].age = 40ms;
  EXPECT_EQ(d.decide(*p, event_kind::pool_added, 0, s), (counts{1, 1}));
}

// An instance that can no longer meet its deadline (its work left, C minus its measured work,
// does not fit in its time left on every core) comes after those that can: first by its deadline,
// it took one of 2 cores from an instance that needed both, and one miss became two (the
// elastic bench's runs of misses). Once it has done enough work to make it, EDF holds again.
TEST(Elastic, AnInstanceThatCanNoLongerMeetItsDeadlineComesLast) {
  using namespace std::chrono_literals;
  auto p = promptly::ext::make_policy("elastic");
  decisions d(2);
  auto s = pools_of({{1, true}, {1, true}});
  // Released 24.7 ms ago with a 27.4 ms period: 2.7 ms left; 2 ms of its 8 ms done, so 6 ms
  // left, which takes (6 - 0.4) / 2 + 0.4 = 3.2 ms on both cores: it will miss.
  s[0].elastic = promptly::elastic_params{.work_ms = 8, .span_ms = 0.4, .period_min_ms = 27.4, .period_max_ms = 27.4, .elasticity = 1};
  s[0].age = 24700us;
  s[0].work_s = 0.002;
  // Just released, 8.2 ms to go, needs both cores: T(1) = 13 > 8.2 >= T(2) = 6.8.
  s[1].elastic = promptly::elastic_params{.work_ms = 13, .span_ms = 0.65, .period_min_ms = 8.2, .period_max_ms = 8.2, .elasticity = 1};
  s[1].age = 0ms;
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{0, 2}));
  // 6 ms done: 2 ms left takes 1.2 ms on both cores, so it can make it and comes first again.
  s[0].work_s = 0.006;
  EXPECT_EQ(d.decide(*p, event_kind::pool_added, 0, s), (counts{1, 1}));
  // Past its deadline: last, whatever it has done.
  s[0].age = 28ms;
  EXPECT_EQ(d.decide(*p, event_kind::pool_added, 0, s), (counts{0, 2}));
}

// The elastic policy ticks (to find held cores), and pool_view::work_s counts since the last
// tick: an instance's work done is summed over the ticks. The instance of the test above with
// 4 ms done by a tick and 2 ms since can make its deadline and comes first.
TEST(Elastic, WorkDoneIsSummedOverQuantumTicks) {
  using namespace std::chrono_literals;
  auto p = promptly::ext::make_policy("elastic");
  decisions d(2);
  auto s = pools_of({{1, true}, {1, true}});
  s[0].elastic = promptly::elastic_params{.work_ms = 8, .span_ms = 0.4, .period_min_ms = 27.4, .period_max_ms = 27.4, .elasticity = 1};
  s[0].age = 24700us;
  s[1].elastic = promptly::elastic_params{.work_ms = 13, .span_ms = 0.65, .period_min_ms = 8.2, .period_max_ms = 8.2, .elasticity = 1};
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{0, 2}));
  s[0].work_s = 0.004;
  d.decide(*p, event_kind::quantum, no_pool, s);
  s[0].work_s = 0.002;  // since the tick
  EXPECT_EQ(d.decide(*p, event_kind::pool_added, 0, s), (counts{1, 1})) << "6 ms done in all";
}

// --- every policy by name -------------------------------------------------------

TEST(JobPolicies, RegisteredByNameAndListed) {
  const std::vector<std::string> names = promptly::ext::policy_names();
  for (const char* n : {"equi", "drep", "drep-steal-boundary", "asteal", "elastic"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_EQ(promptly::ext::make_policy(n)->name(), n);
  }
  try {
    (void)promptly::ext::make_policy("cfs");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("drep-steal-boundary"), std::string::npos) << e.what();
  }
}

TEST(JobPolicies, NoCoreEverGoesToAPoolWithoutWorkAndNoneIdlesWhileWorkExists) {
  // A random walk of pool events under every policy: every decision gives
  // pools without work nothing, and (the policies are work-conserving)
  // places every core while any pool has work.
  for (const char* name : {"equi", "drep", "drep-steal-boundary", "asteal", "elastic"}) {
    auto p = promptly::ext::make_policy(name);
    decisions d(4);
    auto s = pools_of({{0, false}, {1, false}, {1, false}, {2, false}, {1, false}});
    d.decide(*p, event_kind::installed, no_pool, s);
    std::mt19937 rng(99);
    for (int step = 0; step < 2000; ++step) {
      const auto i = static_cast<std::size_t>(rng() % s.size());
      s[i].has_ready_work = !s[i].has_ready_work;
      const counts c = d.decide(*p, s[i].has_ready_work ? event_kind::became_nonempty : event_kind::became_empty,
                                s[i].id, s);
      bool any = false;
      unsigned best_rank = ~0u;
      for (std::size_t k = 0; k < s.size(); ++k) {
        if (!s[k].has_ready_work) ASSERT_EQ(c[k], 0u) << name << " step " << step;
        if (s[k].has_ready_work) {
          any = true;
          best_rank = std::min(best_rank, s[k].rank);
        }
      }
      ASSERT_EQ(sum(c), any ? 4u : 0u) << name << " step " << step;
      if (std::string(name) != "asteal")  // asteal's surplus may reach less urgent classes
        for (std::size_t k = 0; k < s.size(); ++k)
          if (s[k].rank != best_rank) ASSERT_EQ(c[k], 0u) << name << ": the urgent class can use every core";
    }
  }
}

TEST(JobPolicies, ElasticWithParametersStaysWorkConservingOnARandomWalk) {
  auto p = promptly::ext::make_policy("elastic");
  decisions d(6);
  auto s = pools_of({{0, false}, {0, false}, {1, false}, {1, false}, {2, false}});
  s[0].elastic = promptly::elastic_params{.work_ms = 20, .span_ms = 2, .period_min_ms = 6, .period_max_ms = 12, .elasticity = 1};
  s[2].elastic = promptly::elastic_params{.work_ms = 30, .span_ms = 3, .period_min_ms = 5, .period_max_ms = 30, .elasticity = 2};
  s[3].elastic = promptly::elastic_params{.work_ms = 9, .span_ms = 8, .period_min_ms = 4, .period_max_ms = 6, .elasticity = 1};
  d.decide(*p, event_kind::installed, no_pool, s);
  std::mt19937 rng(5);
  for (int step = 0; step < 2000; ++step) {
    const auto i = static_cast<std::size_t>(rng() % s.size());
    s[i].has_ready_work = !s[i].has_ready_work;
    const counts c = d.decide(*p, s[i].has_ready_work ? event_kind::became_nonempty : event_kind::became_empty,
                              s[i].id, s);
    bool any = false;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (!s[k].has_ready_work) ASSERT_EQ(c[k], 0u) << "step " << step;
      any = any || s[k].has_ready_work;
    }
    ASSERT_EQ(sum(c), any ? 6u : 0u) << "step " << step;
    // Pool 0 alone in its class meets T_max = 12 on 2 cores ((20-2)/2+2 = 11).
    if (s[0].has_ready_work && !s[1].has_ready_work) ASSERT_GE(c[0], 2u) << "step " << step;
  }
}

// --- a core held in another pool's strand --------------------------------------

// The rule of job_classes.hpp ("Held cores") through the decision object:
// a core assigned to a stalled pool while it serves another with work is
// counted where it is, and a core free to move takes the stalled pool's
// share; the counts per pool stay the policy's.
TEST(HeldCores, AStalledPoolGetsACoreFreeToMoveAndTheCountsStay) {
  auto p = promptly::ext::make_policy("equi");
  decisions d(2);
  auto s = pools_of({{0, true}, {0, false}});  // b (older), a
  d.decide(*p, event_kind::installed, no_pool, s);
  s[1].has_ready_work = true;
  EXPECT_EQ(d.decide(*p, event_kind::became_nonempty, 1, s), (counts{1, 1}));
  ASSERT_EQ(d.of(0).first(), 0u) << "core 0 kept at b";
  ASSERT_EQ(d.of(1).first(), 1u) << "core 1 moved to a";
  d.hold(1, 0);  // ... but a strand of b holds it
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{1, 1}));
  EXPECT_EQ(d.of(1).first(), 1u) << "a is not stalled yet (a quantum may not have passed): nothing moves";
  s[1].stalled = true;
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{1, 1}));
  EXPECT_EQ(d.of(1).first(), 0u) << "the held core is counted at b";
  EXPECT_EQ(d.of(0).first(), 1u) << "the free core takes a's share";
  d.hold(1, no_pool);
  s[1].stalled = false;
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{1, 1}));
  EXPECT_EQ(d.of(0).first(), 1u) << "no swap back";
  EXPECT_EQ(d.of(1).first(), 0u);
}

TEST(HeldCores, AHolderWithoutACountMakesTheLastServedPoolWaitInstead) {
  // Three pools of a class on 2 cores: the oldest two get one each, the
  // newest none. Core 0, assigned the oldest, is held by the newest's
  // strand: the second (served after the oldest) waits for it, and core 1
  // serves the oldest.
  auto p = promptly::ext::make_policy("equi");
  decisions d(2);
  auto s = pools_of({{0, true}, {0, true}, {0, true}});
  EXPECT_EQ(d.decide(*p, event_kind::installed, no_pool, s), (counts{1, 1, 0}));
  ASSERT_EQ(d.of(0).first(), 0u);
  ASSERT_EQ(d.of(1).first(), 1u);
  d.hold(0, 2);
  s[0].stalled = true;
  EXPECT_EQ(d.decide(*p, event_kind::quantum, no_pool, s), (counts{1, 1, 0}));
  EXPECT_EQ(d.of(0).first(), 1u) << "pinned to the last pool served after its own";
  EXPECT_EQ(d.of(1).first(), 0u) << "the free core serves the oldest";
  // The last pool served waits: nothing better exists.
  decisions last(2);
  EXPECT_EQ(last.decide(*p, event_kind::installed, no_pool, s = pools_of({{0, true}, {0, true}, {0, true}})),
            (counts{1, 1, 0}));
  last.hold(1, 2);
  s[1].stalled = true;
  EXPECT_EQ(last.decide(*p, event_kind::quantum, no_pool, s), (counts{1, 1, 0}));
  EXPECT_EQ(last.of(0).first(), 0u);
  EXPECT_EQ(last.of(1).first(), 1u);
}


namespace {

// A drep seed whose draws, on the runtime's events below (pool b arrives
// alone, then pool a arrives), move worker 1 only to a: the case a mapping
// unaware of held cores gets wrong. Found through the decision object, so it
// follows the standard library's distributions.
std::uint64_t drep_seed_moving_worker_one_only() {
  for (std::uint64_t seed = 1; seed < 1000; ++seed) {
    auto p = make_drep_policy({.seed = seed});
    decisions d(2);
    auto s = pools_of({{0, false}, {0, false}, {0, false}});  // level 0, b, a
    d.decide(*p, event_kind::installed, no_pool, s);
    s[1].has_ready_work = true;
    d.decide(*p, event_kind::became_nonempty, 1, s);
    s[2].has_ready_work = true;
    d.decide(*p, event_kind::became_nonempty, 2, s);
    if (d.of(0).first() == 1 && d.of(1).first() == 2) return seed;
  }
  ADD_FAILURE() << "no drep seed below 1000 moves worker 1 only";
  return 0;
}

}  // namespace

// A core inside a strand cannot move before the strand reaches a boundary,
// whatever the policy assigned it. Pool b runs one task on each of the 2
// workers; the one on worker 1 then spins without a strand boundary until
// pool a's task has run, the other returns. Then pool a gets work and its
// share of the cores. Keeping each core where it was assigned keeps worker
// 0 (the lowest index) at b and moves worker 1 to a: a is counted as served
// while its core is held by b's strand, and (b waiting for a) nothing ever
// runs a's task. The policy must give a the core that can take it.
class JobPoliciesWithAHeldCore : public ::testing::TestWithParam<std::string> {};

TEST_P(JobPoliciesWithAHeldCore, APoolGetsACoreThatIsNotHeldInAnotherPoolsStrand) {
  const std::string& policy = GetParam();
  promptly::runtime rt(config(2, policy, 1));
  if (policy == "drep") rt.set_policy(make_drep_policy({.seed = drep_seed_moving_worker_one_only()}));
  if (policy == "drep-steal-boundary")
    rt.set_policy(make_drep_steal_boundary_policy({.seed = drep_seed_moving_worker_one_only()}));
  // Under linear speedup serpt gives every core to one job (a, whose expected remaining work is
  // the least), and the free core takes it; a near-even split gives each job one core.
  if (policy == "serpt") rt.set_policy(make_serpt_policy({.speedup_exponent = 0.01}, nullptr));
  std::atomic<int> arrived{0};
  std::atomic<bool> held{false}, freed{false}, a_ran{false}, give_up{false};
  auto b_task = [&] {
    arrived.fetch_add(1);
    while (arrived.load() < 2 && !give_up.load()) std::this_thread::yield();  // both workers in b
    if (promptly::detail::current_worker()->index != 1) {
      freed.store(true);
      return;
    }
    held.store(true);
    while (!a_ran.load() && !give_up.load()) std::this_thread::yield();  // no strand boundary
  };
  // Ends the spin on every exit, a failed assertion's too: else the
  // runtime's destructor would wait for it for ever.
  struct release_at_exit {
    std::atomic<bool>& flag;
    ~release_at_exit() { flag.store(true); }
  } releaser{give_up};
  const promptly::pool b = rt.create_pool();
  auto b0 = rt.submit(b, b_task);
  auto b1 = rt.submit(b, b_task);
  ASSERT_TRUE(wait_until([&] { return held.load() && freed.load(); })) << describe(rt);
  const promptly::pool a = rt.create_pool();
  auto a0 = rt.submit(a, [&] { a_ran.store(true); });
  // A few quanta suffice; the guard only bounds a broken build.
  const bool ran = wait_until([&] { return a_ran.load(); }, std::chrono::seconds(10));
  const std::string state = describe(rt);
  give_up.store(true);
  b0.get();
  b1.get();
  a0.get();
  EXPECT_TRUE(ran) << "pool " << a.id << " never ran: its core is held by pool " << b.id << "'s strand\n" << state;
  rt.remove_pool(a);
  rt.remove_pool(b);
}

INSTANTIATE_TEST_SUITE_P(Policies, JobPoliciesWithAHeldCore,
                         ::testing::Values("equi", "drep", "drep-steal-boundary", "asteal", "elastic", "serpt"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// --- in a runtime ---------------------------------------------------------------

class JobPoliciesInARuntime : public ::testing::TestWithParam<std::tuple<std::string, unsigned>> {};

// Pools of two classes come and go while the runtime runs, each with a task
// tree, an async and a task_group child; every task completes.
TEST_P(JobPoliciesInARuntime, EveryTaskOfEveryPoolCompletes) {
  const auto& [policy, workers] = GetParam();
  promptly::runtime rt(config(workers, policy, 2));
  watchdog guard(60s, "pools under " + policy, [&] { return describe(rt); });
  const int depth = under_tsan ? 8 : 16;
  const std::size_t pools = under_tsan ? 8 : 24;
  std::atomic<long> side_tasks{0};
  for (int round = 0; round < 2; ++round) {
    std::vector<promptly::pool> made;
    std::vector<promptly::future<long>> results;
    for (std::size_t i = 0; i < pools; ++i) {
      promptly::pool_options o{.rank = static_cast<unsigned>(i % 2)};
      if (i % 3 == 0)
        o.elastic = promptly::elastic_params{.work_ms = 4, .span_ms = 1, .period_min_ms = 2, .period_max_ms = 8, .elasticity = 1};
      made.push_back(rt.create_pool(o));
      const promptly::pool p = made.back();
      results.push_back(rt.submit(p, [&, p, depth] {
        auto side = promptly::async([&] { return fib(depth - 2); });
        promptly::task_group tg;
        tg.spawn([&] { side_tasks.fetch_add(1); });
        const long mine = fib(depth);
        tg.wait();
        EXPECT_EQ(promptly::current_pool(), p);
        return mine + side.get();
      }));
    }
    for (auto& r : results) EXPECT_EQ(r.get(), fib_serial(depth) + fib_serial(depth - 2));
    for (auto p : made) rt.remove_pool(p);
  }
  EXPECT_EQ(side_tasks.load(), static_cast<long>(2 * pools));
  EXPECT_EQ(rt.stats().policy, policy);
}

// A decision that gives a new job both cores stores both assignments
// before it wakes either: the worker it wakes first may preempt the decider
// on its core, and then starts the job and wakes the other core itself. The
// gate holds the decider after its first wake-up, as that preemption does;
// the job's two branches can only both start on two cores. When the decider
// stored and woke core by core, the second core slept with its old
// assignment until the decider ran again (bench/results/jobs/overheads/
// ab-apply-wakes/: at 5% load a tenth of the jobs ran their first 0.9 ms or
// more on one core).
TEST(JobPoliciesInARuntimeDecider, TheFirstCoreWokenWakesTheNextWhileTheDeciderIsHeld) {
  namespace chaos = promptly::detail::chaos;
  promptly::runtime rt(config(2, "drep", 1));
  watchdog guard(60s, "decider held after its first wake-up", [&] { return describe(rt); });
  const std::uint64_t decided = rt.stats().decisions;
  const promptly::pool p = rt.create_pool({});
  // The pool's arrival is decided (no work: no core changes); the next
  // decision that changes both cores is the one the submission causes.
  ASSERT_TRUE(wait_until([&] { return rt.stats().decisions > decided; })) << describe(rt);
  // The decider must be the policy thread: a worker awake at its loop top
  // decides pending events itself, and held there it is the core the test
  // waits for. Asleep, neither decides, and the submission wakes the policy
  // thread only (no core's word is the new pool yet).
  ASSERT_TRUE(wait_until([&] { return rt.stats().sleeping_workers == 2; })) << describe(rt);
  struct gate_opened {
    ~gate_opened() { promptly::detail::chaos::decision_wake_gate.open(); }
  } reset;
  chaos::decision_wake_gate.arm();
  std::atomic<bool> first_started{false}, second_started{false}, give_up{false};
  auto job = rt.submit(p, [&] {
    promptly::join(
        [&] {
          first_started.store(true);
          // Returns once the other branch started elsewhere (or the test gave up).
          while (!second_started.load() && !give_up.load()) std::this_thread::yield();
        },
        [&] { second_started.store(true); });
  });
  ASSERT_TRUE(wait_until([&] { return first_started.load(); })) << "the job never started: " << describe(rt);
  const bool met = wait_until([&] { return second_started.load(); }, 20s);
  // The worker the decider woke first may preempt it on its CPU before it
  // reaches its second wake-up (the case this test is about), so the second
  // core can join before the gate holds the decider: it reaches the gate
  // afterwards, which shows the decision woke both cores.
  const bool held = wait_until([&] { return chaos::decision_wake_gate.held(); }, 20s);
  give_up.store(true);
  chaos::decision_wake_gate.open();
  job.get();
  EXPECT_TRUE(held) << "no decision waking both cores was held: the test did not set up its case";
  EXPECT_TRUE(met) << "the second core did not join the job while the decider was held after its first wake-up";
  rt.remove_pool(p);
}

INSTANTIATE_TEST_SUITE_P(Policies, JobPoliciesInARuntime,
                         ::testing::Combine(::testing::Values("equi", "drep", "drep-steal-boundary", "asteal", "elastic"),
                                            ::testing::Values(2u, 4u)),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n + "_" + std::to_string(std::get<1>(info.param)) + "_workers";
                         });
