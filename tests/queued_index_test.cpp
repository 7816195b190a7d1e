// The pool table's queued index (src/sched/pool_table.hpp): the pools that
// workers serving every pool walk when they steal and before they sleep.
// A walk visits the pools that had queued work since the last walk, not
// every pool id (thousands of live pools under `oblivious`), and a walker
// clearing a pool it found empty never hides work queued there meanwhile.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "sched/pool_table.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

using namespace std::chrono_literals;
using promptly::detail::pool_record;
using promptly::detail::pool_table;
using promptly::detail::task;

void open_pools(pool_table& t, std::size_t n) {
  std::lock_guard lock(t.mutex());
  for (std::size_t i = 0; i < n; ++i) t.open_locked().phase.store(promptly::detail::pool_phase::live);
}

void queue(pool_table& t, task& x, std::uint32_t pool) {
  x.pool = static_cast<std::uint16_t>(pool);
  t.at(pool).injection.push(&x);
  t.note_queued(pool);
}

// Walks the index like a thief: takes one task from the first pool with
// one. Returns the task and counts the pools it visited.
task* steal(pool_table& t, unsigned& visited) {
  task* found = nullptr;
  t.for_each_queued(0, [&](std::uint32_t id) {
    ++visited;
    found = t.at(id).injection.take();
    if (found != nullptr) t.at(id).injection.settle_taken();
    return found != nullptr;
  });
  return found;
}

TEST(QueuedIndex, AWalkVisitsThePoolsWithQueuedWorkNotEveryPool) {
  pool_table t(2);
  open_pools(t, 4000);
  task a(nullptr), b(nullptr);
  queue(t, a, 17);
  queue(t, b, 3999);
  t.assert_queued_index_covers();
  unsigned visited = 0;
  EXPECT_EQ(steal(t, visited), &a);
  EXPECT_EQ(visited, 1u) << "the walk read pools without queued work";
  visited = 0;
  EXPECT_EQ(steal(t, visited), &b);
  EXPECT_EQ(visited, 2u) << "pool 17, emptied, is visited once more and unmarked";
  visited = 0;
  EXPECT_EQ(steal(t, visited), nullptr);
  EXPECT_EQ(visited, 1u) << "pool 3999, emptied, is visited once more and unmarked";
  visited = 0;
  EXPECT_EQ(steal(t, visited), nullptr);
  EXPECT_EQ(visited, 0u) << "an empty table costs no pool visits";
  EXPECT_FALSE(t.queued_marked(17));
  EXPECT_FALSE(t.queued_marked(3999));
}

// A queuer racing walkers that unmark pools they find empty: every task is
// found (a lost mark would leave a task no walk visits: the guard fires).
TEST(QueuedIndex, WorkQueuedWhileAWalkerUnmarksThePoolIsFound) {
  constexpr std::uint32_t pools = 130;  // three words of the index
  const int per_pool = under_tsan || under_asan ? 20 : 200;
  pool_table t(2);
  open_pools(t, pools);
  std::vector<task> tasks(static_cast<std::size_t>(pools) * per_pool, task(nullptr));
  std::atomic<std::size_t> taken{0};
  watchdog guard(hang_guard, "walkers finding every queued task");
  auto walker = [&] {
    while (taken.load() < tasks.size()) {
      unsigned visited = 0;
      if (steal(t, visited) != nullptr) taken.fetch_add(1);
    }
  };
  std::thread w1(walker), w2(walker);
  for (std::size_t i = 0; i < tasks.size(); ++i) queue(t, tasks[i], static_cast<std::uint32_t>(i % pools));
  w1.join();
  w2.join();
  EXPECT_EQ(taken.load(), tasks.size());
  t.assert_queued_index_covers();
}

}  // namespace
