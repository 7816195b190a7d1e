// Timers of the reactor: sleeps park the task, fire in deadline order (equal
// deadlines in start order), never early and with bounded lateness; the
// periodic timer keeps its schedule; stop tokens cancel sleeps.
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

class IoTimers : public ::testing::Test {
 protected:
  void TearDown() override { expect_reactor_idle(); }
};

// One worker: while a task sleeps, the worker runs another task.
TEST_F(IoTimers, SleepParksTheFiberNotTheWorker) {
  promptly::runtime rt{workers(1)};
  std::atomic<bool> other_ran{false};
  rt.run([&] {
    auto sleeper = promptly::async([&] {
      io::sleep_for(50ms).get();
      return other_ran.load();
    });
    auto other = promptly::async([&] { other_ran = true; });
    other.get();
    EXPECT_TRUE(sleeper.get());
  });
}

// Sleeping tasks started in shuffled order wake in deadline order, none
// early, none later than late_bound. One worker, so wake-up order is the
// order in which the reactor made them ready (the injection queue is FIFO).
TEST_F(IoTimers, FireInDeadlineOrderWithBoundedLateness) {
  promptly::runtime rt{workers(1)};
  const int n = 40;
  const auto spacing = 3ms;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::mutex mu;
  std::vector<int> woke;
  std::vector<double> lateness_ms(n, -1);
  // Every task must be parked before the first deadline; under TSan
  // spawning and parking 40 tasks can take longer than 30 ms.
  const auto base = clock::now() + (under_tsan ? 500ms : 30ms);
  rt.run([&] {
    promptly::task_group tg;
    for (int i : order) {
      tg.spawn([&, i] {
        const auto at = base + i * spacing;
        io::sleep_until(at).get();
        const auto now = clock::now();
        std::lock_guard lock(mu);
        woke.push_back(i);
        lateness_ms[i] = std::chrono::duration<double, std::milli>(now - at).count();
      });
    }
    tg.wait();
  });
  std::vector<int> sorted(n);
  std::iota(sorted.begin(), sorted.end(), 0);
  EXPECT_EQ(woke, sorted);
  const double bound = late_bound_ms;
  for (int i = 0; i < n; ++i) {
    EXPECT_GE(lateness_ms[i], 0.0) << "timer " << i << " fired early";
    EXPECT_LE(lateness_ms[i], bound) << "timer " << i << " fired " << lateness_ms[i] << " ms late";
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
  const auto base = clock::now() + 20ms;
  std::vector<clock::time_point> at(n);
  for (int i = 0; i < n; ++i) at[i] = base + std::chrono::milliseconds(rng() % 10);  // many ties
  std::vector<int> log;
  std::mutex mu;
  std::vector<promptly::future<void>> done;
  for (int i = 0; i < n; ++i) {
    auto* op = new recording_timer(at[i], i, log, mu);
    done.push_back(op->get_future());
    promptly::io::detail::start(op, {});
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

TEST_F(IoTimers, PeriodicTimerKeepsItsSchedule) {
  promptly::runtime rt{workers(2)};
  const auto period = 10ms;
  const int ticks = 10;
  const auto first = clock::now() + period;
  io::periodic_timer timer(period, first);
  std::vector<double> at_ms;
  rt.run([&] {
    for (int k = 0; k < ticks; ++k) {
      EXPECT_EQ(timer.tick().get(), 1u);
      at_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - first).count());
    }
  });
  const double bound = late_bound_ms;
  for (int k = 0; k < ticks; ++k) {
    EXPECT_GE(at_ms[k], 10.0 * k) << "tick " << k << " early";
    EXPECT_LE(at_ms[k], 10.0 * k + bound) << "tick " << k << " late";
  }
  // No drift: the schedule is first + k * period however late a tick was.
  EXPECT_EQ(timer.next(), first + ticks * period);
}

TEST_F(IoTimers, MissedTicksAreCoalesced) {
  io::periodic_timer timer(5ms);
  timer.tick().get();
  std::this_thread::sleep_for(26ms);  // about 5 ticks pass unobserved
  EXPECT_GE(timer.tick().get(), 4u);   // overdue: ready at once, with the count
  EXPECT_EQ(timer.tick().get(), 1u);   // and back on schedule
  EXPECT_THROW(io::periodic_timer(0ms), std::invalid_argument);
}

TEST_F(IoTimers, OneTickPendingAtATime) {
  io::periodic_timer timer(1h);
  std::stop_source stop;
  auto f = timer.tick(stop.get_token());
  EXPECT_THROW(timer.tick(), std::logic_error);
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
  EXPECT_NO_THROW(timer.tick(stop.get_token()));  // pending flag was cleared
}

// Many sleeps, a random half cancelled from another thread while the
// reactor fires the rest: every future completes exactly once.
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
  int fired = 0, cancelled = 0;
  for (auto& s : sleeps) {
    try {
      s.get();
      ++fired;
    } catch (const io::cancelled&) {
      ++cancelled;
    }
  }
  canceller.join();
  EXPECT_EQ(fired + cancelled, n);
  EXPECT_GE(fired, n / 2);
}
