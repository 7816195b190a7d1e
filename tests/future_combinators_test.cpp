// Future combinators (future.hpp, typed/combinators.hpp): wait_for / wait_until park the
// waiter (its worker runs other work meanwhile) and time out; then runs a continuation at a
// level once its antecedent is ready; when_all / when_any complete on the inputs' events;
// the typed forms give their results the priority rule TOUCH allows.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "promptly/co/task.hpp"
#include "promptly/promptly.hpp"
#include "promptly/typed.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

using namespace std::chrono_literals;

promptly::runtime_config workers(unsigned n) {
  promptly::runtime_config c;
  c.workers = n;
  return c;
}

}  // namespace

// ---- wait_for / wait_until ----

TEST(FutureWaitFor, ParksSoTheOnlyWorkerRunsTheTaskThatMakesItReady) {
  // One worker: if wait_for spun or blocked the thread, the task that keeps the promise could
  // never run and the wait would end in a timeout at the hang guard.
  watchdog guard(2 * hang_guard, "wait_for on the only worker");
  promptly::runtime rt{workers(1)};
  const auto [status, value, helper_ran_while_waiting] = rt.run([] {
    promptly::promise<int> p;
    auto f = p.get_future();
    std::atomic<bool> helper_ran{false};
    auto helper = promptly::async([&] {
      helper_ran = true;
      p.set_value(7);
    });
    const auto s = f.wait_for(hang_guard);
    const bool ran = helper_ran.load();
    helper.get();
    return std::tuple{s, f.get(), ran};
  });
  EXPECT_EQ(status, promptly::future_status::ready);
  EXPECT_EQ(value, 7);
  EXPECT_TRUE(helper_ran_while_waiting);
}

TEST(FutureWaitFor, TimesOutOnAFutureThatStaysUnready) {
  promptly::runtime rt{workers(2)};
  promptly::promise<int> p;
  auto f = p.get_future();
  rt.run([&] {
    EXPECT_EQ(f.wait_for(1ms), promptly::future_status::timeout);
    EXPECT_EQ(f.wait_for(0ms), promptly::future_status::timeout);
    EXPECT_EQ(f.wait_for(-5s), promptly::future_status::timeout);
    EXPECT_EQ(f.wait_until(std::chrono::system_clock::now() + 1ms), promptly::future_status::timeout);
  });
  // Outside any worker the thread blocks on the same timer.
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now() + 1ms), promptly::future_status::timeout);
  p.set_value(3);  // the records the timed-out waits left on f fire harmlessly
  EXPECT_EQ(f.wait_for(0ms), promptly::future_status::ready);
  EXPECT_EQ(f.wait_for(std::chrono::hours::max()), promptly::future_status::ready);
  EXPECT_EQ(f.get(), 3);
  promptly::future<int> empty;
  EXPECT_THROW((void)empty.wait_for(1ms), promptly::future_empty);
}

TEST(FutureWaitFor, AnOutsideThreadWaitsForATaskWithoutATimeout) {
  promptly::runtime rt{workers(2)};
  promptly::promise<void> gate;
  auto f = rt.submit([g = gate.get_future()] {
    g.get();
    return 5;
  });
  EXPECT_EQ(f.wait_for(0ms), promptly::future_status::timeout);
  gate.set_value();
  EXPECT_EQ(f.wait_for(std::chrono::hours(1)), promptly::future_status::ready);
  EXPECT_EQ(f.get(), 5);
}

// ---- then ----

TEST(FutureThen, RunsAtItsLevelOnlyOnceTheAntecedentIsReady) {
  promptly::runtime rt{workers(2)};
  rt.run(promptly::level{3}, [] {
    promptly::promise<int> p;
    std::atomic<bool> ran{false};
    auto next = p.get_future().then(promptly::level{1}, [&](const int& v) {
      ran = true;
      return std::pair{v * 2, promptly::current_level()};
    });
    auto same_level = next.then([](std::pair<int, unsigned> r) { return r.first + 1; });
    EXPECT_FALSE(ran.load());  // made ready by the promise only
    EXPECT_FALSE(next.is_ready());
    p.set_value(21);
    const auto [value, level] = next.get();
    EXPECT_EQ(value, 42);
    EXPECT_EQ(level, 1u);
    EXPECT_EQ(same_level.get(), 43);
  });
}

TEST(FutureThen, AnExceptionSkipsAValueContinuationAndReachesAFutureContinuation) {
  promptly::runtime rt{workers(2)};
  rt.run([] {
    auto failing = promptly::async([]() -> int { throw std::invalid_argument("antecedent"); });
    std::atomic<bool> value_called{false};
    auto skipped = failing.then([&](int) {
      value_called = true;
      return 0;
    });
    auto handled = failing.then([](promptly::future<int> f) {
      try {
        (void)f.get();
        return std::string("no exception");
      } catch (const std::invalid_argument& e) {
        return std::string(e.what());
      }
    });
    auto after_void = promptly::async([] {}).then([] { return 9; });
    EXPECT_THROW((void)skipped.get(), std::invalid_argument);
    EXPECT_FALSE(value_called.load());
    EXPECT_EQ(handled.get(), "antecedent");
    EXPECT_EQ(after_void.get(), 9);
  });
}

TEST(FutureThen, OutsideAWorkerItUsesTheAntecedentsRuntime) {
  promptly::runtime rt{workers(2)};
  auto f = rt.submit(promptly::level{2}, [] { return 4; });
  auto g = f.then([](int v) { return std::pair{v + 1, promptly::current_level()}; });
  EXPECT_EQ(g.get(), (std::pair{5, 2u}));
  promptly::promise<int> p;
  EXPECT_THROW((void)p.get_future().then([](int v) { return v; }), promptly::not_on_worker);
  EXPECT_THROW((void)promptly::future<int>().then([](int v) { return v; }), promptly::future_empty);
}

TEST(FutureThen, ALongChainRunsInOrder) {
  promptly::runtime rt{workers(2)};
  const int n = under_tsan || under_asan ? 200 : 2000;
  const int last = rt.run([&] {
    promptly::promise<int> start;
    promptly::future<int> f = start.get_future();
    for (int i = 0; i < n; ++i) f = f.then([](int v) { return v + 1; });
    start.set_value(0);
    return f.get();
  });
  EXPECT_EQ(last, n);
}

// ---- when_all / when_any ----

TEST(FutureWhenAll, IsReadyWhenEveryInputIsAndHoldsThem) {
  promptly::runtime rt{workers(2)};
  rt.run([] {
    promptly::promise<std::string> late;
    auto a = promptly::async([] { return 1; });
    auto b = promptly::async([]() -> int { throw std::out_of_range("b"); });
    auto all = promptly::when_all(a, b, late.get_future());
    a.wait();
    b.wait();
    EXPECT_FALSE(all.is_ready());  // the promise is still open
    late.set_value("c");
    auto [fa, fb, fc] = all.get();
    EXPECT_TRUE(fa.is_ready() && fb.is_ready() && fc.is_ready());
    EXPECT_EQ(fa.get(), 1);
    EXPECT_THROW((void)fb.get(), std::out_of_range);  // an input's exception stays in the input
    EXPECT_EQ(fc.get(), "c");
    EXPECT_TRUE(promptly::when_all().is_ready());
  });
}

TEST(FutureWhenAll, ARangeOfManyFutures) {
  promptly::runtime rt{workers(4)};
  const int n = under_tsan || under_asan ? 300 : 3000;
  const long sum = rt.run([&] {
    std::vector<promptly::future<long>> fs;
    for (int i = 0; i < n; ++i) fs.push_back(promptly::async([i] { return long{i}; }));
    auto all = promptly::when_all(fs.begin(), fs.end());
    long s = 0;
    for (auto& f : all.get()) s += f.get();
    EXPECT_TRUE(promptly::when_all(fs.end(), fs.end()).get().empty());
    return s;
  });
  EXPECT_EQ(sum, static_cast<long>(n) * (n - 1) / 2);
}

TEST(FutureWhenAny, NamesTheInputThatWasReadyFirst) {
  promptly::runtime rt{workers(2)};
  rt.run([] {
    promptly::promise<int> never_before;
    promptly::promise<int> first;
    auto any = promptly::when_any(never_before.get_future(), first.get_future());
    EXPECT_FALSE(any.is_ready());
    first.set_value(8);
    auto r = any.get();
    EXPECT_EQ(r.index, 1u);
    EXPECT_EQ(std::get<1>(r.futures).get(), 8);
    EXPECT_FALSE(std::get<0>(r.futures).is_ready());
    never_before.set_value(0);  // the hook still registered on it fires harmlessly

    std::vector<promptly::future<int>> fs;
    promptly::promise<int> open;
    fs.push_back(open.get_future());
    fs.push_back(promptly::async([] { return 2; }));
    auto r2 = promptly::when_any(fs.begin(), fs.end()).get();
    EXPECT_EQ(r2.index, 1u);
    EXPECT_EQ(r2.futures.size(), 2u);
    open.set_value(1);
  });
  std::vector<promptly::future<int>> none;
  EXPECT_THROW((void)promptly::when_any(none.begin(), none.end()), std::invalid_argument);
  EXPECT_THROW((void)promptly::when_all(promptly::future<int>()), promptly::future_empty);
}

TEST(FutureWhenAny, ManyRacingCompletions) {
  promptly::runtime rt{workers(4)};
  const int rounds = under_tsan || under_asan ? 50 : 500;
  rt.run([&] {
    for (int i = 0; i < rounds; ++i) {
      std::vector<promptly::future<int>> fs;
      for (int j = 0; j < 4; ++j) fs.push_back(promptly::async([j] { return j; }));
      auto r = promptly::when_any(fs.begin(), fs.end()).get();
      ASSERT_LT(r.index, 4u);
      EXPECT_EQ(r.futures[r.index].get(), static_cast<int>(r.index));
      EXPECT_TRUE(r.futures[r.index].is_ready());
    }
  });
}

// ---- in coroutines ----

TEST(FutureCombinatorsInCoroutines, ACoroutineAwaitsWhenAllAndWhenAny) {
  // A combined future is a promptly::future, so co::task awaits it like any other: the
  // coroutine holds only its frame while it waits.
  promptly::runtime rt{workers(2)};
  promptly::promise<int> a;
  promptly::promise<std::string> b;
  using either_t = promptly::when_any_result<std::tuple<promptly::future<int>, promptly::future<std::string>>>;
  auto body = [](promptly::future<either_t> any, promptly::future<int> fa,
                 promptly::future<std::string> fb) -> promptly::co::task<std::string> {
    auto first = co_await std::move(any);
    auto all = co_await promptly::when_all(fa, fb);
    co_return std::to_string(first.index) + ":" + std::to_string(std::get<0>(all).get()) + std::get<1>(all).get();
  };
  // when_any registers on its inputs here, before either is ready, so b decides it.
  auto f = promptly::co::spawn(rt, body(promptly::when_any(a.get_future(), b.get_future()), a.get_future(), b.get_future()));
  b.set_value("x");  // b first: when_any names input 1
  EXPECT_EQ(f.wait_for(0ms), promptly::future_status::timeout);  // the when_all still waits for a
  a.set_value(7);
  EXPECT_EQ(f.get(), "1:7x");
}

// ---- typed priorities ----

namespace {
struct ui {};
struct fetch {};
struct logp {};
struct batch {};
using order = promptly::priority_order<promptly::chain<ui, fetch, batch>, promptly::chain<ui, logp, batch>>;
namespace pt = promptly::typed;
template <class P>
using ctx = pt::ctx<order, P>;
}  // namespace

TEST(TypedCombinators, ResultsTakeTheLeastUrgentInputsPriorityOrTheNamedOne) {
  promptly::runtime rt{workers(2)};
  const int r = pt::run<order, batch>(rt, [](ctx<batch> c) {
    auto a = pt::fcreate<ui>(c, [] { return 1; });
    auto b = pt::fcreate<fetch>(c, [] { return 2; });
    auto l = pt::fcreate<logp>(c, [] { return 3; });
    auto both = pt::when_all(c, a, b);
    static_assert(std::is_same_v<decltype(both)::priority, fetch>);
    auto any = pt::when_any<batch>(c, b, l);  // fetch and logp are unrelated: the result's priority is named
    static_assert(std::is_same_v<decltype(any)::priority, batch>);
    auto next = pt::then(c, b, [](ctx<fetch>, const int& v) { return std::pair{v + 10, promptly::current_level()}; });
    static_assert(std::is_same_v<decltype(next)::priority, fetch>);
    auto lower = pt::then<batch>(c, l, [](ctx<batch> cb, pt::future<int, logp> f) { return cb.touch(f) + 100; });
    const auto& [fa, fb] = c.touch(both);
    const auto [v, level] = c.touch(next);
    EXPECT_EQ(level, order::level_of<fetch>);
    const auto& got = c.touch(any);
    EXPECT_TRUE(got.index == 0 || got.index == 1);
    return fa.get(c) + fb.get(c) + v + c.touch(lower);
  });
  EXPECT_EQ(r, 1 + 2 + 12 + 103);
}
