// future_cell: empty reads are values; load / store / exchange /
// compare_exchange keep every reference count exact under concurrency
// (each future state is destroyed exactly once, none leaks); CAS compares
// handle identity. Stress from plain threads and from tasks.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "promptly/future_cell.hpp"
#include "promptly/promise.hpp"
#include "promptly/promptly.hpp"
#include "test_support.hpp"

namespace {

std::atomic<long> tracked_made{0};
std::atomic<long> tracked_destroyed{0};

// A value that counts its constructions and destructions.
struct tracked {
  int id;
  explicit tracked(int i) : id(i) { tracked_made.fetch_add(1); }
  tracked(const tracked& o) : id(o.id) { tracked_made.fetch_add(1); }
  tracked(tracked&& o) noexcept : id(o.id) { tracked_made.fetch_add(1); }
  ~tracked() { tracked_destroyed.fetch_add(1); }
};

}  // namespace

TEST(TypedFutureCell, EmptyCellReadsAsNoFuture) {
  promptly::future_cell<int> cell;
  EXPECT_FALSE(cell.holds_future());
  promptly::future<int> f = cell.load();
  EXPECT_FALSE(f.valid());
  EXPECT_THROW(f.get(), promptly::future_empty);
  EXPECT_FALSE(cell.exchange({}).valid());
}

TEST(TypedFutureCell, CompareExchangeComparesIdentity) {
  promptly::promise<int> p1, p2;
  p1.set_value(1);
  p2.set_value(1);
  promptly::future_cell<int> cell(p1.get_future());
  promptly::future<int> other = p2.get_future();  // same value, different future
  promptly::future<int> expected = other;
  EXPECT_FALSE(cell.compare_exchange(expected, p2.get_future()));
  EXPECT_EQ(expected.get(), 1);  // now a handle to p1's future, read from the cell
  EXPECT_TRUE(cell.compare_exchange(expected, other));
  promptly::future<int> none;
  EXPECT_FALSE(cell.compare_exchange(none, {}));
  EXPECT_TRUE(none.valid());
  promptly::future<int> old = cell.exchange({});
  EXPECT_TRUE(old.valid());
  promptly::future<int> empty;
  EXPECT_TRUE(cell.compare_exchange(empty, p1.get_future()));  // empty == empty
  EXPECT_TRUE(cell.holds_future());
}

// Plain threads race every operation on a few cells holding promise futures
// of a counted type. Afterwards every state was destroyed exactly once.
TEST(TypedFutureCell, StressFromThreadsKeepsReferenceCountsExact) {
  tracked_made = 0;
  tracked_destroyed = 0;
  {
    const int values = 16;
    std::vector<promptly::future<tracked>> pool;
    {
      std::vector<promptly::promise<tracked>> promises(values);
      for (int i = 0; i < values; ++i) {
        promises[i].set_value(tracked(i));
        pool.push_back(promises[i].get_future());
      }
    }
    std::vector<promptly::future_cell<tracked>> cells(4);
    const int threads = 4;
    const long iterations = static_cast<long>(scaled(200000, 20));
    std::atomic<long> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
        for (long i = 0; i < iterations; ++i) {
          auto& cell = cells[rng() % cells.size()];
          const int v = static_cast<int>(rng() % (values + 1));
          promptly::future<tracked> f = v == values ? promptly::future<tracked>{} : pool[v];
          switch (rng() % 4) {
            case 0: {
              auto got = cell.load();
              if (got.valid() && (got.get().id < 0 || got.get().id >= values)) bad.fetch_add(1);
              break;
            }
            case 1:
              cell.store(std::move(f));
              break;
            case 2: {
              auto old = cell.exchange(std::move(f));
              if (old.valid() && !old.is_ready()) bad.fetch_add(1);
              break;
            }
            default: {
              auto expected = cell.load();
              if (!cell.compare_exchange(expected, f) && expected.valid() && expected.get().id >= values)
                bad.fetch_add(1);
              break;
            }
          }
        }
      });
    }
    for (auto& th : ts) th.join();
    EXPECT_EQ(bad.load(), 0);
  }
  // Each promise made its value once by moving a temporary: 2 constructions
  // and 2 destructions per value, whatever the cells did.
  EXPECT_EQ(tracked_made.load(), tracked_destroyed.load());
  EXPECT_EQ(tracked_made.load(), 32);
}

// Tasks publish their own futures through one cell with CAS (the email
// pattern at scale, untyped): the operations form one chain in slot order.
TEST(TypedFutureCell, StressFromTasksChainsThroughCas) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  promptly::runtime rt(cfg);
  const int ops = under_tsan ? 300 : 5000;
  promptly::future_cell<int> slot;
  std::atomic<int> broken{0};
  int last = -1;  // written only by the operation holding the turn
  rt.run([&] {
    std::vector<promptly::future<int>> all;
    for (int i = 0; i < ops; ++i) {
      // Each operation learns its own handle through a promise its creator
      // completes right after async returns.
      auto self = std::make_shared<promptly::promise<promptly::future<int>>>();
      auto f = promptly::async([&, i, my_handle = self->get_future()]() mutable {
        // Moved out, so the promise's state no longer refers back to this task's.
        promptly::future<int> me = std::move(my_handle).get();
        promptly::future<int> prev = slot.load();
        while (!slot.compare_exchange(prev, me)) {
        }
        const int prev_id = prev.valid() ? prev.get() : -1;
        if (last != prev_id) broken.fetch_add(1);
        last = i;
        return i;
      });
      self->set_value(f);
      all.push_back(std::move(f));
    }
    for (auto& f : all) f.get();
  });
  EXPECT_EQ(broken.load(), 0);
}
