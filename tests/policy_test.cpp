// Table-driven tests of APS (I-Cilk's Fig. 1 desire, top-down allotment
// with leftovers) and of the policies' decisions, through the runtime's own
// decision object (tests/policy_support.hpp).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "policy/aps.hpp"
#include "policy_support.hpp"
#include "promptly/ext/policy.hpp"

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

TEST(Policies, ObliviousRoamsEveryCoreAndKeepsThemRoaming) {
  auto p = promptly::ext::make_policy("oblivious");
  decisions d(3);
  std::vector<pool_view> s(2);
  d.decide(*p, event_kind::installed, promptly::ext::no_pool, s);
  EXPECT_TRUE(d.all_roaming());
  s[1].has_ready_work = true;
  d.decide(*p, event_kind::became_nonempty, 1, s);
  d.decide(*p, event_kind::pool_added, 1, s);
  EXPECT_TRUE(d.all_roaming());
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
