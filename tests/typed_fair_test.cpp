// Fairness criteria by typed priority (promptly/typed/fair_criterion.hpp):
// each priority's weight goes to the level the typed layer runs it at, the
// `fair` policy's own accounting (runtime::stats(): share, sampled_share)
// reports the shares the criterion asked for, per priority, whether the
// criterion came with the configuration or through typed::set_fairness, and
// bad criteria are rejected naming the priority. The compile-time side
// (a priority not in the order, one named twice, none named, a constexpr
// criterion with a negative or all-zero weight) is tests/compile_fail/fair_*.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "promptly/fork_join.hpp"
#include "promptly/typed.hpp"
#include "test_support.hpp"
#include "typed_support.hpp"

namespace {

using namespace std::chrono_literals;
namespace pt = promptly::typed;

struct ui {};
struct fetch {};
struct journal {};
struct batch {};
// The partial order of docs/typed-priorities.md (its `log` is `journal` here: a type named
// log would clash with ::log of <cmath>): declared ui, fetch, batch, journal; the
// linearisation puts journal (declared last) above batch. A criterion that used declaration
// positions instead of levels would give journal's weight to batch.
using order = promptly::priority_order<promptly::chain<ui, fetch, batch>, promptly::chain<ui, journal, batch>>;
template <class P>
using ctx = pt::ctx<order, P>;

static_assert(order::level_of<ui> == 0 && order::level_of<fetch> == 1 && order::level_of<journal> == 2 &&
              order::level_of<batch> == 3);

// fetch is not named: it weighs 0.
constexpr pt::fair_criterion<order> crit{pt::weight<batch>(1), pt::weight<ui>(4), pt::weight<journal>(3)};
static_assert(crit.weight_of<ui>() == 4 && crit.weight_of<fetch>() == 0 && crit.weight_of<journal>() == 3 &&
              crit.weight_of<batch>() == 1);
static_assert(crit.share_of<ui>() == 0.5 && crit.share_of<journal>() == 0.375 && crit.share_of<batch>() == 0.125);

// A fairly prompt runtime of 2 workers (the machine's count) and 8 levels (more than the
// order uses: plain-level code may share the runtime), with 1 ms rounds so that the
// policy samples many rounds quickly.
promptly::runtime_config fair_typed_config(std::vector<long long> weights) {
  promptly::runtime_config c = typed_config(8);
  c.policy = "fair";
  c.fair.round = 1ms;
  c.fair.weights = std::move(weights);
  return c;
}

// Keeps a level busy with short parallel strands until `stop`: every join is a strand
// boundary, where a worker can change level.
void keep_busy(const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) promptly::join([] {}, [] {});  // relaxed: a flag, no data
}

// Rounds to wait for before reading sampled shares: with systematic sampling on 2 workers
// a level of share F gets floor(2F) or ceil(2F) primaries per round, so after n rounds its
// sampled share is within about 0.5 * sqrt(0.25 / n) (one standard deviation) of F. At
// n = 450 the tolerance is 5.1 of them (a false failure about once in 3 million runs); at
// the 150 rounds TSan used to wait for it was 2.9, and a TSan run failed with 0.311 for
// 0.25. A round takes about a millisecond, so TSan waits as long as Release.
constexpr std::uint64_t rounds = 450;
constexpr double sampled_tolerance = 0.06;

// Keeps priorities P and Q busy (two busy levels keep the policy's quantum ticking)
// until `rounds` more quanta have been decided; returns the stats then.
template <class P, class Q>
promptly::runtime_stats stats_after_rounds(promptly::runtime& rt) {
  std::atomic<bool> stop{false};
  auto busy = [&stop](auto) { keep_busy(stop); };
  auto a = pt::submit<order, P>(rt, busy);
  auto b = pt::submit<order, Q>(rt, busy);
  const std::uint64_t from = rt.stats().quanta;
  const bool ticked = wait_until([&] { return rt.stats().quanta >= from + rounds; });
  const promptly::runtime_stats st = rt.stats();
  stop.store(true, std::memory_order_relaxed);  // relaxed: a flag, no data
  a.get();
  b.get();
  EXPECT_TRUE(ticked) << "the fair policy stopped deciding rounds";
  return st;
}

// Every priority's level reports the criterion's share; levels past the order weigh 0.
void expect_shares(const promptly::runtime_stats& st, const pt::fair_criterion<order>& c) {
  ASSERT_EQ(st.levels.size(), 8u);
  EXPECT_DOUBLE_EQ(st.levels[order::level_of<ui>].share, c.share_of<ui>());
  EXPECT_DOUBLE_EQ(st.levels[order::level_of<fetch>].share, c.share_of<fetch>());
  EXPECT_DOUBLE_EQ(st.levels[order::level_of<journal>].share, c.share_of<journal>());
  EXPECT_DOUBLE_EQ(st.levels[order::level_of<batch>].share, c.share_of<batch>());
  for (unsigned l = order::size; l < st.levels.size(); ++l) EXPECT_EQ(st.levels[l].share, 0.0) << "level " << l;
}

void expect_sampled_shares(const promptly::runtime_stats& st, const pt::fair_criterion<order>& c) {
  EXPECT_NEAR(st.levels[order::level_of<ui>].sampled_share, c.share_of<ui>(), sampled_tolerance);
  EXPECT_NEAR(st.levels[order::level_of<fetch>].sampled_share, c.share_of<fetch>(), sampled_tolerance);
  EXPECT_NEAR(st.levels[order::level_of<journal>].sampled_share, c.share_of<journal>(), sampled_tolerance);
  EXPECT_NEAR(st.levels[order::level_of<batch>].sampled_share, c.share_of<batch>(), sampled_tolerance);
}

}  // namespace

TEST(TypedFair, WeightsAreIndexedByTheLevelsOfTheirPriorities) {
  EXPECT_EQ(crit.weights(), (std::vector<long long>{4, 0, 3, 1}));  // ui, fetch, journal, batch
  // A total order keeps its declaration order; the order the weights are given in does not matter.
  using total = promptly::priority_order<promptly::chain<batch, journal, ui>>;
  const pt::fair_criterion<total> t{pt::weight<ui>(7), pt::weight<batch>(2)};
  EXPECT_EQ(t.weights(), (std::vector<long long>{2, 0, 7}));
  // Weights known only at run time.
  long long from_config = 9;
  const pt::fair_criterion<order> r{pt::weight<fetch>(from_config)};
  EXPECT_EQ(r.weights(), (std::vector<long long>{0, 9, 0, 0}));
  EXPECT_EQ(r.share_of<fetch>(), 1.0);
}

TEST(TypedFair, TheRuntimesAccountingShowsTheCriterionFromTheConfiguration) {
  promptly::runtime rt{fair_typed_config(crit.weights())};
  const promptly::runtime_stats st = stats_after_rounds<ui, batch>(rt);
  EXPECT_EQ(st.policy, "fair");
  expect_shares(st, crit);
  expect_sampled_shares(st, crit);
  // fetch weighs 0, yet its work runs: levels with no work donate their workers.
  EXPECT_EQ((pt::run<order, fetch>(rt, [](ctx<fetch>) { return 5; })), 5);
}

TEST(TypedFair, SetFairnessInstallsACriterionWhileRunning) {
  promptly::runtime rt{fair_typed_config({})};  // every level weighs 1
  EXPECT_DOUBLE_EQ(rt.stats().levels[order::level_of<batch>].share, 1.0 / 8);
  const pt::fair_criterion<order> next{pt::weight<fetch>(1), pt::weight<batch>(3)};
  pt::set_fairness(rt, next);  // at once under `fair`: the accounting restarts
  const promptly::runtime_stats st = stats_after_rounds<fetch, batch>(rt);
  expect_shares(st, next);
  expect_sampled_shares(st, next);
}

TEST(TypedFair, SetFairnessUnderAnotherPolicyWaitsForFair) {
  promptly::runtime_config c = fair_typed_config({});
  c.policy = "prompt";
  promptly::runtime rt{c};
  pt::set_fairness(rt, crit);
  EXPECT_EQ((rt.stats().levels[order::level_of<ui>].share), 0.0) << "prompt reports no fairness accounting";
  rt.set_policy("fair");
  expect_shares(rt.stats(), crit);
}

TEST(TypedFair, BadCriteriaAreRejectedNamingThePriority) {
  long long negative = -5;  // a run-time value: the check throws instead of failing to compile
  const std::string minus = what_of<std::invalid_argument>([&] { (void)pt::weight<batch>(negative); });
  EXPECT_NE(minus.find("'batch'"), std::string::npos) << minus;
  EXPECT_NE(minus.find("-5"), std::string::npos) << minus;

  long long zero = 0;
  const std::string zeros = what_of<std::invalid_argument>(
      [&] { (void)pt::fair_criterion<order>{pt::weight<ui>(zero), pt::weight<journal>(zero)}; });
  EXPECT_NE(zeros.find("every weight is 0 (ui, journal)"), std::string::npos) << zeros;

  // A runtime with fewer levels than the order has priorities: rejected as typed::run
  // rejects it, and the previous criterion stays.
  promptly::runtime_config c = fair_typed_config({1, 1});
  c.levels = 2;
  promptly::runtime small{c};
  const std::string levels = what_of<std::out_of_range>([&] { pt::set_fairness(small, crit); });
  EXPECT_NE(levels.find("declares 4 priorities but the runtime has 2 levels"), std::string::npos) << levels;
  EXPECT_DOUBLE_EQ(small.stats().levels[0].share, 0.5);
}
