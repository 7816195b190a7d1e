// The set-walking rules (src/sched/set_walk.hpp), case by case: which pool a
// worker serves at its loop top, which pools of its ranked set it takes work
// from, and when it belongs further up its set. The scheduling loop, the
// policy thread and the simulator all call these; the runtime's and the
// simulator's tests check the behaviour they produce together.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <set>
#include <vector>

#include "sched/set_walk.hpp"

namespace walk = promptly::detail::set_walk;
using promptly::detail::no_pool;
using promptly::detail::pool_set;

namespace {

pool_set ranked(std::initializer_list<std::uint32_t> ids) {
  const std::vector<std::uint32_t> v(ids);
  return pool_set::ranked(v);
}

// A view of the pools: the ids with ready work, and the ids the walk read, in
// order (the rules read each pool at most once, most urgent first, and stop
// at the first that decides).
struct pools_view {
  std::set<std::uint32_t> with_work;
  mutable std::vector<std::uint32_t> read;
  auto ready() const {
    return [this](std::uint32_t id) {
      read.push_back(id);
      return with_work.count(id) != 0;
    };
  }
};

struct serve_case {
  const char* what;
  pool_set set;
  std::uint32_t serving;
  std::set<std::uint32_t> with_work;
  std::uint32_t expected;
  std::vector<std::uint32_t> reads;
};

TEST(SetWalk, PoolToServe) {
  const serve_case cases[] = {
      {"asleep: no pool", pool_set::none(), 3, {3}, no_pool, {}},
      {"every pool: stays", pool_set::every_pool(), 5, {1, 2}, 5, {}},
      {"one pool, serving it", ranked({4}), 4, {}, 4, {}},
      {"one pool, serving another: goes there", ranked({4}), 7, {}, 4, {4}},
      {"serving the top: stays without reading", ranked({1, 2, 3}), 1, {1, 2, 3}, 1, {}},
      {"nothing above has work: stays", ranked({1, 2, 3}), 3, {3}, 3, {1, 2}},
      {"the first above with work wins", ranked({1, 2, 3}), 3, {2}, 2, {1, 2}},
      {"the most urgent with work wins", ranked({1, 2, 3}), 3, {1, 2}, 1, {1}},
      {"work below is no reason to move", ranked({1, 2, 3}), 2, {3}, 2, {1}},
      {"not in the set, none has work: the top", ranked({1, 2, 3}), 9, {}, 1, {1, 2, 3}},
      {"not in the set: the first with work", ranked({1, 2, 3}), 9, {3}, 3, {1, 2, 3}},
  };
  for (const serve_case& c : cases) {
    SCOPED_TRACE(c.what);
    const pools_view pools{c.with_work, {}};
    EXPECT_EQ(walk::pool_to_serve(c.set, c.serving, pools.ready()), c.expected);
    EXPECT_EQ(pools.read, c.reads);
  }
}

struct take_case {
  const char* what;
  pool_set set;
  std::set<std::uint32_t> with_work;
  std::uint8_t expected;
  std::vector<std::uint32_t> reads;
};

TEST(SetWalk, PoolsToTakeFrom) {
  const take_case cases[] = {
      {"asleep: none", pool_set::none(), {1}, 0, {}},
      {"every pool: 0 (the caller takes from every pool)", pool_set::every_pool(), {1}, 0, {}},
      {"one pool: it, work or not", ranked({4}), {}, 1, {}},
      {"no pool has work: all of them", ranked({1, 2, 3}), {}, 3, {1, 2}},
      {"the top has work: only the top", ranked({1, 2, 3}), {1, 2, 3}, 1, {1}},
      {"up to the first with work", ranked({1, 2, 3}), {2}, 2, {1, 2}},
      {"work at the last only: all of them", ranked({1, 2, 3}), {3}, 3, {1, 2}},
  };
  for (const take_case& c : cases) {
    SCOPED_TRACE(c.what);
    const pools_view pools{c.with_work, {}};
    EXPECT_EQ(walk::pools_to_take_from(c.set, pools.ready()), c.expected);
    EXPECT_EQ(pools.read, c.reads);
  }
}

struct above_case {
  const char* what;
  pool_set set;
  std::uint32_t pool;
  std::set<std::uint32_t> with_work;
  bool expected;
  std::vector<std::uint32_t> reads;
};

TEST(SetWalk, ReadyWorkRankedAbove) {
  const above_case cases[] = {
      {"asleep: never", pool_set::none(), 1, {1}, false, {}},
      {"every pool: never (no order)", pool_set::every_pool(), 2, {1}, false, {}},
      {"the top: nothing is above it", ranked({1, 2, 3}), 1, {1, 2, 3}, false, {}},
      {"work right above", ranked({1, 2, 3}), 3, {2}, true, {1, 2}},
      {"work at the top", ranked({1, 2, 3}), 3, {1}, true, {1}},
      {"work only below", ranked({1, 2, 3}), 2, {3}, false, {1}},
      {"no work above", ranked({1, 2, 3}), 3, {3}, false, {1, 2}},
      {"a pool not in the set: never", ranked({1, 2, 3}), 9, {1}, false, {1}},
  };
  for (const above_case& c : cases) {
    SCOPED_TRACE(c.what);
    const pools_view pools{c.with_work, {}};
    EXPECT_EQ(walk::ready_work_ranked_above(c.set, c.pool, pools.ready()), c.expected);
    EXPECT_EQ(pools.read, c.reads);
  }
}

}  // namespace
