// Coroutine tasks (promptly/co/task.hpp, promptly/co/typed.hpp): results and exceptions reach the
// spawned future, children run by co_await, futures, promises, I/O and
// timers resume the coroutine in its own pool, co::yield lets the pool's
// other work run, shutdown waits for suspended coroutines, an unawaited task
// is destroyed unrun, many waiting coroutines hold no fiber stack, and typed
// coroutines touch typed futures under rule TOUCH (the compile-time side:
// tests/compile_fail/co_touch_less_urgent.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "io_test_support.hpp"
#include "promptly/co/task.hpp"
#include "promptly/co/typed.hpp"
#include "promptly/typed.hpp"
#include "promptly/typed/io.hpp"

using namespace io_test;
namespace co = promptly::co;

namespace {

// Out of line: code after a co_await may run on another thread, and an
// inlined thread-local read could reuse the address computed before it.
[[gnu::noinline]] unsigned level_here() { return promptly::current_level(); }

co::task<int> answer() { co_return 42; }
co::task<> nothing_at_all() { co_return; }
co::task<int> fails() {
  throw std::runtime_error("from a coroutine");
  co_return 0;  // unreachable; makes this a coroutine
}

co::task<long> co_fib(int n) {
  if (n < 2) co_return n;
  long a = co_await co_fib(n - 1);
  long b = co_await co_fib(n - 2);
  co_return a + b;
}

// Number of mappings of this process (each fiber stack adds two).
std::size_t mappings() {
  std::ifstream maps("/proc/self/maps");
  std::size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

}  // namespace

class Coroutines : public ::testing::Test {
 protected:
  void TearDown() override { expect_reactor_idle(); }
};

TEST_F(Coroutines, ResultsAndExceptionsReachTheFuture) {
  within(60s, "spawned coroutines", [] {
    promptly::runtime rt{workers(2)};
    EXPECT_EQ(co::spawn(rt, answer()).get(), 42);
    co::spawn(rt, promptly::level{1}, nothing_at_all()).get();
    auto f = co::spawn(rt, fails());
    EXPECT_EQ(what_of<std::runtime_error>([&] { (void)f.get(); }), "from a coroutine");
  });
}

// Children run by co_await (symmetric transfer); exceptions cross each level.
TEST_F(Coroutines, ChildrenReturnValuesAndExceptions) {
  within(60s, "nested coroutines", [] {
    promptly::runtime rt{workers(2)};
    EXPECT_EQ(co::spawn(rt, co_fib(18)).get(), 2584);
    auto outer = []() -> co::task<std::string> {
      try {
        (void)co_await fails();
      } catch (const std::runtime_error& e) {
        co_return std::string("caught: ") + e.what();
      }
      co_return "not thrown";
    };
    EXPECT_EQ(co::spawn(rt, outer()).get(), "caught: from a coroutine");
  });
}

// A long chain of children that finish at once: symmetric transfer keeps
// the stack flat (a resume() per child would overflow the 256 KiB stack).
TEST_F(Coroutines, ChildrenThatFinishAtOnceUseNoStack) {
  within(60s, "a long chain of children", [] {
    promptly::runtime rt{workers(1)};
    auto loop = []() -> co::task<long> {
      long sum = 0;
      for (int i = 0; i < 200000; ++i) sum += co_await answer();
      co_return sum;
    };
    EXPECT_EQ(co::spawn(rt, loop()).get(), 200000L * 42);
  });
}

// Futures of tasks and of promises set on another thread, awaited by lvalue
// (a reference to the shared value) and by rvalue (moved out).
TEST_F(Coroutines, AwaitFuturesOfTasksAndPromises) {
  within(60s, "awaiting futures", [] {
    promptly::runtime rt{workers(2)};
    promptly::promise<std::unique_ptr<int>> from_thread;
    auto body = [](promptly::future<std::unique_ptr<int>> p) -> co::task<int> {
      auto task_future = promptly::async([] { return std::string("task"); });
      const std::string& s = co_await task_future;
      std::unique_ptr<int> v = co_await std::move(p);
      co_return static_cast<int>(s.size()) + *v;
    };
    auto f = co::spawn(rt, body(from_thread.get_future()));
    std::thread setter([&] { from_thread.set_value(std::make_unique<int>(10)); });
    EXPECT_EQ(f.get(), 14);
    setter.join();
  });
}

// A broken promise and an empty future surface as exceptions in the coroutine.
TEST_F(Coroutines, AwaitedFailuresAreRethrown) {
  within(60s, "awaited failures", [] {
    promptly::runtime rt{workers(1)};
    auto body = []() -> co::task<int> {
      promptly::future<int> broken;
      {
        promptly::promise<int> p;
        broken = p.get_future();
      }
      int caught = 0;
      try {
        (void)co_await broken;
      } catch (const promptly::broken_promise&) {
        ++caught;
      }
      try {
        (void)co_await promptly::future<int>{};
      } catch (const promptly::future_empty&) {
        ++caught;
      }
      co_return caught;
    };
    EXPECT_EQ(co::spawn(rt, body()).get(), 2);
  });
}

// I/O futures: an echo over a socket pair, a sleep, each resumed in the
// coroutine's own level although the reactor thread completes them.
TEST_F(Coroutines, AwaitIoAndTimersInTheirOwnLevel) {
  within(60s, "coroutine I/O", [] {
    promptly::runtime rt{workers(2)};
    auto [a, b] = io::make_socket_pair();
    auto echo = [](io::descriptor d) -> co::task<unsigned> {
      char buf[64];
      std::size_t n = co_await io::read(d, std::span<char>(buf, sizeof buf));
      const unsigned after_read = level_here();
      co_await io::write(d, std::string_view(buf, n));
      co_await io::sleep_for(1ms);
      co_return after_read * 10 + level_here();
    };
    auto client = [](io::descriptor& d) -> co::task<std::string> {
      co_await io::write(d, "ping");
      char buf[16];
      std::size_t n = co_await io::read(d, std::span<char>(buf, sizeof buf));
      co_return std::string(buf, n);
    };
    auto server = co::spawn(rt, promptly::level{2}, echo(std::move(a)));
    EXPECT_EQ(co::spawn(rt, promptly::level{1}, client(b)).get(), "ping");
    EXPECT_EQ(server.get(), 22u);
  });
}

// co::spawn from a coroutine: into another level, and the result awaited.
TEST_F(Coroutines, SpawnFromACoroutine) {
  within(60s, "spawn from a coroutine", [] {
    promptly::runtime rt{workers(2)};
    auto child = []() -> co::task<unsigned> {
      co_await co::yield();
      co_return level_here();
    };
    auto parent = [child]() -> co::task<unsigned> {
      auto elsewhere = co::spawn(promptly::level{2}, child());
      auto here = co::spawn(child());
      unsigned there = co_await elsewhere;
      co_return there * 10 + co_await here;
    };
    EXPECT_EQ(co::spawn(rt, promptly::level{1}, parent()).get(), 21u);
    EXPECT_THROW((void)co::spawn(child()), promptly::not_on_worker);
  });
}

// One worker: a coroutine that yields in a loop until another coroutine of
// its pool has run. Without yield (or had yield run it again at once, as
// the worker's LIFO deque would) the second never runs and the guard fires.
TEST_F(Coroutines, YieldLetsThePoolsOtherWorkRun) {
  within(60s, "co::yield", [] {
    promptly::runtime rt{workers(1)};
    std::atomic<bool> other_ran{false};
    auto spinner = [](std::atomic<bool>& flag) -> co::task<long> {
      long rounds = 0;
      while (!flag.load()) {
        ++rounds;
        co_await co::yield();
      }
      co_return rounds;
    };
    auto setter = [](std::atomic<bool>& flag) -> co::task<> {
      flag.store(true);
      co_return;
    };
    auto both = [&]() -> co::task<long> {
      auto s = co::spawn(spinner(other_ran));
      co_await co::yield();
      auto t = co::spawn(setter(other_ran));
      co_await t;
      co_return co_await s;
    };
    EXPECT_GE(co::spawn(rt, both()).get(), 1);
  });
}

// A task never spawned nor awaited is destroyed with its parameters and
// never runs; one whose spawn is refused is destroyed the same way.
TEST_F(Coroutines, UnstartedTasksAreDestroyedUnrun) {
  within(60s, "unstarted tasks", [] {
    auto token = std::make_shared<int>(0);
    bool ran = false;
    auto body = [](std::shared_ptr<int> held, bool& flag) -> co::task<> {
      flag = true;
      (void)held;
      co_return;
    };
    { auto t = body(token, ran); }
    EXPECT_FALSE(ran);
    EXPECT_EQ(token.use_count(), 1);
    promptly::runtime rt{workers(1)};
    EXPECT_THROW((void)co::spawn(rt, promptly::pool{4000}, body(token, ran)), std::out_of_range);
    EXPECT_FALSE(ran);
    EXPECT_EQ(token.use_count(), 1);
    co::task<> moved_from = body(token, ran);
    auto keep = std::move(moved_from);
    EXPECT_THROW((void)co::spawn(rt, std::move(moved_from)), promptly::future_empty);
    rt.shutdown();
    EXPECT_THROW((void)co::spawn(rt, std::move(keep)), promptly::runtime_stopped);
    EXPECT_FALSE(ran);
    EXPECT_EQ(token.use_count(), 1);
  });
}

// Shutdown waits for a coroutine suspended on a timer (it is counted in its
// level from spawn to its end), and remove_pool for one in the pool.
TEST_F(Coroutines, ShutdownAndRemovePoolWaitForSuspendedCoroutines) {
  within(60s, "shutdown with a suspended coroutine", [] {
    std::atomic<int> finished{0};
    auto napper = [](std::atomic<int>& done) -> co::task<> {
      co_await io::sleep_for(20ms);
      done.fetch_add(1);
    };
    {
      promptly::runtime rt{workers(1)};
      promptly::pool p = rt.create_pool();
      (void)co::spawn(rt, p, napper(finished));
      rt.remove_pool(p);
      EXPECT_EQ(finished.load(), 1);
      (void)co::spawn(rt, napper(finished));
    }
    EXPECT_EQ(finished.load(), 2);
  });
}

// Many coroutines waiting at once on timers and on one future: each holds
// its frame only. The runtime maps no fiber per waiter (stats().fibers and
// /proc/self/maps stay flat), where as many waiting fibers would need two
// mappings each and pass Linux's default vm.max_map_count (65530). A
// coroutine spawns them and releases them, so that spawning and waking go
// through its worker's deque.
TEST_F(Coroutines, ManyWaitingCoroutinesHoldNoFiberStack) {
  const std::size_t n = scaled(100000, 10);
  within(120s, "many waiting coroutines", [n] {
    promptly::runtime rt{workers(2)};
    std::atomic<std::size_t> waiting{0};
    promptly::promise<void> checked;
    auto on_timer = [](std::stop_token t, std::atomic<std::size_t>& w) -> co::task<int> {
      w.fetch_add(1, std::memory_order_relaxed);
      try {
        co_await io::sleep_for(1h, t);
      } catch (const io::cancelled&) {
        co_return 1;
      }
      co_return 0;
    };
    auto on_future = [](promptly::future<int> f, std::atomic<std::size_t>& w) -> co::task<int> {
      w.fetch_add(1, std::memory_order_relaxed);
      co_return co_await f;
    };
    auto spawner = [&](promptly::future<void> go) -> co::task<long> {
      std::stop_source stop;
      promptly::promise<int> gate;
      promptly::future<int> opened = gate.get_future();
      std::vector<promptly::future<int>> results;
      results.reserve(n);
      for (std::size_t i = 0; i < n; ++i)
        results.push_back(i % 2 == 0 ? co::spawn(on_timer(stop.get_token(), waiting))
                                     : co::spawn(on_future(opened, waiting)));
      co_await go;  // the test thread has counted the waiters
      stop.request_stop();
      gate.set_value(1);
      long sum = 0;
      for (auto& r : results) sum += co_await r;
      co_return sum;
    };
    const std::size_t maps_before = mappings();
    auto total = co::spawn(rt, spawner(checked.get_future()));
    ASSERT_TRUE(wait_until([&] { return waiting.load() == n; }));
    ASSERT_TRUE(wait_until([&] { return io::stats().pending_operations >= n / 2; }));
    const auto stats = rt.stats();
    EXPECT_LT(stats.fibers, 64u);
    EXPECT_EQ(stats.blocked_waits, 0u);
    EXPECT_LT(mappings(), maps_before + 200);
    checked.set_value();
    EXPECT_EQ(total.get(), static_cast<long>(n));
  });
}

namespace {
struct ui {};
struct batch {};
using order = promptly::priority_order<promptly::chain<ui, batch>>;  // ui > batch
template <class P>
using typed_ctx = promptly::typed::ctx<order, P>;
namespace pt = promptly::typed;

// A batch coroutine touches an I/O future at ui and one at its own priority.
co::task<std::string> typed_echo(typed_ctx<batch> c, io::descriptor& a, io::descriptor& b) {
  co_await co::touch(c, pt::io::write<ui>(c, a, std::string_view("typed")));
  std::string buf(5, '\0');
  auto n = pt::io::read(c, b, std::span<char>(buf));
  buf.resize(co_await co::touch(c, n));
  co_return buf + std::to_string(level_here());
}
}  // namespace

static_assert(std::is_same_v<decltype(co::spawn(std::declval<const typed_ctx<batch>&>(), std::declval<co::task<int>>())),
                             pt::future<int, batch>>);
static_assert(std::is_same_v<decltype(co::spawn<ui>(std::declval<const typed_ctx<batch>&>(), std::declval<co::task<int>>())),
                             pt::future<int, ui>>);

TEST_F(Coroutines, TypedCoroutinesTouchUnderRuleTouch) {
  within(60s, "typed coroutines", [] {
    promptly::runtime_config cfg = workers(2);
    cfg.levels = 2;
    promptly::runtime rt{cfg};
    auto sockets = io::make_socket_pair();
    io::descriptor& a = sockets.first;
    io::descriptor& b = sockets.second;
    const std::string got = pt::run<order, batch>(rt, [&](typed_ctx<batch> c) {
      pt::future<std::string, batch> f = co::spawn(c, typed_echo(c, a, b));
      return c.touch(std::move(f));
    });
    EXPECT_EQ(got, "typed1");
  });
}
