// Futures: values, void, move-only types, exceptions; many-to-one and
// one-to-many touches; futures stored in shared data and touched by other
// tasks; waiting from outside threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"
#include "test_support.hpp"
#include "thread_state.hpp"

namespace {

using namespace std::chrono_literals;

promptly::runtime_config two_workers() {
  promptly::runtime_config c;
  c.workers = 2;
  return c;
}
}  // namespace

class Futures : public ::testing::Test {
 protected:
  promptly::runtime rt{two_workers()};
};

TEST_F(Futures, ValueVoidMoveOnly) {
  auto r = rt.run([] {
    auto a = promptly::async([] { return std::string("abc"); });
    std::atomic<int> side{0};
    auto v = promptly::async([&] { side = 5; });
    auto m = promptly::async([] { return std::make_unique<int>(42); });
    v.get();
    std::unique_ptr<int> p = std::move(m).get();
    return a.get() + std::to_string(side.load() + *p);
  });
  EXPECT_EQ(r, "abc47");
}

TEST_F(Futures, ExceptionReachesEveryToucher) {
  rt.run([] {
    auto f = promptly::async([]() -> int { throw std::invalid_argument("bad"); });
    auto g = f;  // a second handle
    EXPECT_THROW(f.get(), std::invalid_argument);
    EXPECT_THROW(g.get(), std::invalid_argument);
    EXPECT_TRUE(g.is_ready());
  });
}

TEST_F(Futures, EmptyFutureIsAnError) {
  promptly::future<int> f;
  EXPECT_FALSE(f.valid());
  EXPECT_THROW(f.get(), promptly::future_empty);
}

// One future touched by many tasks at once (one-to-many). The awaited task
// does not finish until `early` readers have found it not ready and are
// about to touch it, so at least that many touches wait (park) on it.
TEST_F(Futures, OneToManyTouches) {
  const int readers = 200, early = 20;
  std::atomic<int> not_ready_when_touched{0};
  std::atomic<bool> slow_held{false};
  auto total = rt.run([&] {
    auto slow = promptly::async([&] {
      slow_held = wait_until([&] { return not_ready_when_touched.load() >= early; });
      return 3;
    });
    std::atomic<int> sum{0};
    promptly::task_group tg;
    for (int i = 0; i < readers; ++i)
      tg.spawn([&, slow] {
        if (!slow.is_ready()) not_ready_when_touched++;
        sum += slow.get();
      });
    tg.wait();
    return sum.load();
  });
  EXPECT_EQ(total, 3 * readers);
  EXPECT_TRUE(slow_held.load()) << "fewer than " << early << " readers touched the future before it was ready";
  EXPECT_GE(not_ready_when_touched.load(), early);
}

// One task touching many futures (many-to-one).
TEST_F(Futures, ManyToOneTouches) {
  auto total = rt.run([] {
    std::vector<promptly::future<long>> fs;
    for (long i = 0; i < 1000; ++i) fs.push_back(promptly::async([i] { return i; }));
    long sum = 0;
    for (auto& f : fs) sum += f.get();
    return sum;
  });
  EXPECT_EQ(total, 999L * 1000 / 2);
}

// A DAG through a shared array of futures: cell i's task touches the
// futures of cells i-1 and i-2, which other tasks created and stored.
TEST_F(Futures, FuturesStoredInSharedArray) {
  const std::size_t n = scaled(2000, 4);
  std::vector<promptly::future<long>> cells(n);
  std::vector<std::atomic<bool>> published(n);
  auto last = rt.run([&] {
    promptly::task_group tg;
    for (std::size_t i = 0; i < n; ++i)
      tg.spawn([&, i] {
        cells[i] = promptly::async([&, i]() -> long {
          if (i < 2) return 1;
          // Other tasks publish their handles; wait until both exist.
          while (!published[i - 1].load(std::memory_order_acquire) || !published[i - 2].load(std::memory_order_acquire))
            std::this_thread::yield();
          return (cells[i - 1].get() + cells[i - 2].get()) % 1'000'003;
        });
        published[i].store(true, std::memory_order_release);
      });
    tg.wait();
    return cells[n - 1].get();
  });
  long a = 1, b = 1;
  for (std::size_t i = 2; i < n; ++i) {
    long c = (a + b) % 1'000'003;
    a = b;
    b = c;
  }
  EXPECT_EQ(last, b);
}

TEST_F(Futures, SubmitAndGetFromOutsideThreads) {
  std::vector<std::thread> ts;
  std::atomic<long> sum{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) sum += rt.submit([t, i] { return t * 1000 + i; }).get();
    });
  for (auto& t : ts) t.join();
  long expect = 0;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 200; ++i) expect += t * 1000 + i;
  EXPECT_EQ(sum.load(), expect);
}

// The task behind the future does not finish until the outside thread is
// blocked in the kernel inside get() (it announces the call, then the task
// watches its state in /proc), so get() really blocks a non-worker thread.
TEST_F(Futures, OutsideThreadWaitsOnFutureCreatedInsideTasks) {
  const pid_t me = current_thread_id();
  std::atomic<bool> calling_get{false};
  std::atomic<bool> saw_blocked{false};
  auto f = rt.run([&] {
    return promptly::async([&] {
      saw_blocked = wait_until([&] { return calling_get.load() && thread_blocked(me); });
      return 9;
    });
  });
  EXPECT_FALSE(f.is_ready());
  calling_get = true;
  EXPECT_EQ(f.get(), 9);  // blocks this (non-worker) thread
  EXPECT_TRUE(saw_blocked.load()) << "get() never blocked the outside thread";
}

// A long chain of dependent futures, each touched right after creation.
TEST_F(Futures, ChainOfDependentFutures) {
  const long n = static_cast<long>(scaled(200'000));
  auto x = rt.run([&] {
    long v = 0;
    for (long i = 0; i < n; ++i) v = promptly::async([v] { return v + 1; }).get();
    return v;
  });
  EXPECT_EQ(x, n);
}

TEST_F(Futures, PromiseFromAnOutsideThreadWakesParkedTasks) {
  promptly::promise<int> p;
  auto f = p.get_future();
  // The producer completes the promise only after all 10 tasks are about to
  // touch it. On 2 workers a task can only start after the one before it
  // on the same worker parked, so at least 8 of them are parked then.
  std::atomic<int> touching{0};
  std::atomic<bool> all_touching{false};
  std::thread producer([&] {
    all_touching = wait_until([&] { return touching.load() == 10; });
    p.set_value(11);
  });
  auto sum = rt.run([f, &touching] {
    std::atomic<int> s{0};
    promptly::task_group tg;
    for (int i = 0; i < 10; ++i)
      tg.spawn([&, f] {
        touching++;
        s += f.get();  // parks until the outside thread sets the value
      });
    tg.wait();
    return s.load();
  });
  producer.join();
  EXPECT_TRUE(all_touching.load()) << "not every task reached the promise's future";
  EXPECT_EQ(sum, 110);
  EXPECT_THROW(p.set_value(1), promptly::promise_already_satisfied);
}

TEST_F(Futures, BrokenPromiseReachesWaiters) {
  promptly::future<std::string> f;
  {
    promptly::promise<std::string> p;
    f = p.get_future();
  }
  EXPECT_THROW(f.get(), promptly::broken_promise);
  promptly::promise<void> pv;
  auto fv = pv.get_future();
  pv.set_exception(std::make_exception_ptr(std::runtime_error("io")));
  EXPECT_THROW(rt.run([fv] { fv.get(); }), std::runtime_error);
}
