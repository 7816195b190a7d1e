// Timers of the reactor: sleeps park the task, fire in deadline order (equal
// deadlines in start order) and never early; the periodic timer keeps its
// schedule and coalesces missed ticks; stop tokens cancel sleeps. How late
// timers fire is a performance property, measured by benchmarks, not
// asserted here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "io/operation.hpp"
#include "io_test_support.hpp"

using namespace io_test;

namespace {
// Durations as plain numbers, so that a failed comparison prints readably.
std::int64_t ns_of(std::chrono::nanoseconds d) { return d.count(); }
std::int64_t ns_after(clock::time_point origin, clock::time_point t) { return ns_of(t - origin); }
}  // namespace

class IoTimers : public ::testing::Test {
 protected:
  void TearDown() override { expect_reactor_idle(); }
};

// One worker: while a task sleeps, the worker runs another task, which ends
// the sleep by stopping it. Had the sleep blocked the worker, it would have
// run its full hour: within() turns that into a failure.
TEST_F(IoTimers, SleepParksTheFiberNotTheWorker) {
  within(60s, "a sleep with one worker", [] {
    promptly::runtime rt{workers(1)};
    std::stop_source wake;
    promptly::promise<void> sleeping;
    auto sleep_pending = sleeping.get_future();
    rt.run([&] {
      auto sleeper = promptly::async([&] {
        auto nap = io::sleep_for(1h, wake.get_token());
        sleeping.set_value();
        nap.get();
      });
      auto other = promptly::async([&] {
        sleep_pending.get();
        wake.request_stop();
      });
      other.get();
      EXPECT_THROW(sleeper.get(), io::cancelled);
    });
  });
}

// Sleeping tasks started in shuffled order wake in deadline order, none
// early. One worker, so wake-up order is the order in which the reactor made
// them ready (the injection queue is FIFO). The order is only defined if
// every sleep was pending (in the timer heap) before the first deadline:
// each task checks that its sleep was not ready when started, and a round
// in which some task started too late is repeated with a wider margin.
TEST_F(IoTimers, FireInDeadlineOrderNeverEarly) {
  promptly::runtime rt{workers(1)};
  const int n = 40;
  const auto spacing = 3ms;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  auto margin = under_tsan ? 500ms : 30ms;
  for (int round = 0;; ++round) {
    ASSERT_LT(round, 6) << "the tasks never all started their sleeps within " << margin.count() << " ms";
    std::mutex mu;
    std::vector<int> woke;
    std::vector<bool> early(n, false);
    std::atomic<bool> started_late{false};
    const auto base = clock::now() + margin;
    rt.run([&] {
      promptly::task_group tg;
      for (int i : order) {
        tg.spawn([&, i] {
          const auto at = base + i * spacing;
          auto nap = io::sleep_until(at);
          if (nap.is_ready()) started_late = true;
          nap.get();
          const bool before_deadline = clock::now() < at;
          std::lock_guard lock(mu);
          woke.push_back(i);
          early[i] = before_deadline;
        });
      }
      tg.wait();
    });
    for (int i = 0; i < n; ++i) EXPECT_FALSE(early[i]) << "timer " << i << " fired early";
    if (started_late) {
      margin *= 2;
      continue;
    }
    std::vector<int> sorted(n);
    std::iota(sorted.begin(), sorted.end(), 0);
    EXPECT_EQ(woke, sorted);
    break;
  }
}

namespace {
// White box: a timer-only operation that logs when the reactor delivers it,
// i.e. the exact firing order of the timer queue.
class recording_timer final : public promptly::io::detail::basic_operation<void> {
 public:
  recording_timer(clock::time_point at, int id, std::vector<int>& log, std::mutex& mu)
      : basic_operation("test", nullptr, promptly::io::detail::direction::in, at), id_(id), log_(log), mu_(mu) {}
  void deliver() noexcept override {
    {
      std::lock_guard lock(mu_);
      log_.push_back(id_);
    }
    basic_operation::deliver();
  }

 private:
  int id_;
  std::vector<int>& log_;
  std::mutex& mu_;
};
}  // namespace

// The timer queue fires by deadline, and equal deadlines in start order.
TEST_F(IoTimers, HeapFiresInDeadlineThenStartOrder) {
  const int n = 300;
  std::mt19937 rng(3);
  // Every timer must be in the heap before the first deadline (checked
  // below); the margin only has to cover starting 300 timers.
  const auto base = clock::now() + (under_tsan ? 2s : 200ms);
  std::vector<clock::time_point> at(n);
  for (int i = 0; i < n; ++i) at[i] = base + std::chrono::milliseconds(rng() % 10);  // many ties
  std::vector<int> log;
  std::mutex mu;
  std::vector<promptly::future<void>> done;
  for (int i = 0; i < n; ++i) {
    auto* op = new recording_timer(at[i], i, log, mu);
    done.push_back(op->get_future());
    promptly::io::detail::start(op, {});
    ASSERT_FALSE(done.back().is_ready()) << "timer " << i << " started after its deadline: widen the margin";
  }
  for (auto& f : done) f.get();
  std::vector<int> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(), [&](int a, int b) { return at[a] < at[b]; });
  EXPECT_EQ(log, expected);
}

TEST_F(IoTimers, PastDeadlineIsReadyAtOnce) {
  auto f = io::sleep_until(clock::now() - 1s);
  EXPECT_TRUE(f.is_ready());
  f.get();
  EXPECT_TRUE(io::sleep_for(0ms).is_ready());
}

TEST_F(IoTimers, SleepFromAPlainThread) {
  auto t0 = clock::now();
  io::sleep_for(20ms).get();
  EXPECT_GE(ms_since(t0), 20.0);
}

// Ticks are never early and the schedule never drifts: after ticks that
// together counted k, the next deadline is first + k * period, however late
// the task observed them (a late observation counts more than 1).
TEST_F(IoTimers, PeriodicTimerKeepsItsSchedule) {
  promptly::runtime rt{workers(2)};
  const auto period = 10ms;
  const std::uint64_t ticks = 10;
  const auto first = clock::now() + period;
  io::periodic_timer timer(period, first);
  rt.run([&] {
    for (std::uint64_t counted = 0; counted < ticks;) {
      const std::uint64_t k = timer.tick().get();
      const auto now = clock::now();
      EXPECT_GE(k, 1u);
      counted += k;
      const auto n = static_cast<std::int64_t>(counted);
      EXPECT_GE(ns_after(first, now), ns_of((n - 1) * period)) << "tick " << n << " early";
      EXPECT_EQ(ns_after(first, timer.next()), ns_of(n * period)) << "drift after " << n << " ticks";
    }
  });
}

// A caller that fell behind gets every missed tick in one count, at once,
// and the schedule goes on from where it stands. The ticks are made overdue
// by starting the schedule in the past (an hour-long period keeps the count
// exact however slow the machine).
TEST_F(IoTimers, MissedTicksAreCoalesced) {
  const auto period = 1h;
  const auto first = clock::now() - 10 * period - 30min;  // ticks 0..10 have passed
  io::periodic_timer timer(period, first);
  auto overdue = timer.tick();
  EXPECT_TRUE(overdue.is_ready()) << "overdue ticks complete at once";
  EXPECT_EQ(overdue.get(), 11u);
  EXPECT_EQ(ns_after(first, timer.next()), ns_of(11 * period)) << "back on the schedule";
  std::stop_source stop;
  auto next = timer.tick(stop.get_token());
  EXPECT_FALSE(next.is_ready()) << "the next tick waits for its time";
  stop.request_stop();
  EXPECT_THROW(next.get(), io::cancelled);
  EXPECT_THROW(io::periodic_timer(0ms), std::invalid_argument);
}

TEST_F(IoTimers, OneTickPendingAtATime) {
  io::periodic_timer timer(1h);
  std::stop_source stop;
  auto f = timer.tick(stop.get_token());
  EXPECT_THROW((void)timer.tick(), std::logic_error);
  stop.request_stop();
  EXPECT_THROW(f.get(), io::cancelled);
}

TEST_F(IoTimers, StopCancelsTicksAndSleeps) {
  io::periodic_timer timer(1h);
  std::stop_source stop;
  auto tick = timer.tick(stop.get_token());
  auto sleep = io::sleep_for(1h, stop.get_token());
  stop.request_stop();
  EXPECT_THROW(tick.get(), io::cancelled);
  EXPECT_THROW(sleep.get(), io::cancelled);
  EXPECT_EQ(io::stats().pending_timers, 0u);
  EXPECT_NO_THROW((void)timer.tick(stop.get_token()));  // pending flag was cleared
}

// Many sleeps, every other one cancelled from another thread while the
// reactor fires the rest: every sleep ends once, a cancelled one either
// fired first or reports io::cancelled, and one never cancelled fires.
TEST_F(IoTimers, ManySleepsRacingCancellation) {
  const int n = static_cast<int>(scaled(2000, 10));
  std::vector<std::stop_source> stops(n);
  std::vector<promptly::future<void>> sleeps;
  std::mt19937 rng(11);
  for (int i = 0; i < n; ++i)
    sleeps.push_back(io::sleep_for(std::chrono::microseconds(rng() % 20000), stops[i].get_token()));
  std::thread canceller([&] {
    for (int i = 0; i < n; i += 2) stops[i].request_stop();
  });
  int cancelled = 0;
  for (int i = 0; i < n; ++i) {
    try {
      sleeps[i].get();
    } catch (const io::cancelled&) {
      EXPECT_EQ(i % 2, 0) << "sleep " << i << " was never stopped, yet reports io::cancelled";
      ++cancelled;
    }
  }
  canceller.join();
  EXPECT_LE(cancelled, (n + 1) / 2);
}
