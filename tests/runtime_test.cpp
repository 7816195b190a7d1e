// Runtime lifetime and configuration: validation, defaults, shutdown
// semantics, idle CPU, and late parallelism being discovered (Lemma 1).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "promptly/promptly.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;

namespace {
double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

TEST(Config, DefaultsAndValidation) {
  EXPECT_GE(promptly::default_worker_count(), 1u);
  promptly::runtime_config c;
  EXPECT_NO_THROW(promptly::validate(c));
  c.fiber_stack_bytes = 1024;
  try {
    promptly::validate(c);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fiber_stack_bytes"), std::string::npos);
  }
  c = {};
  c.workers = 100000;
  EXPECT_THROW(promptly::runtime{c}, std::invalid_argument);
  EXPECT_EQ(promptly::parse_sleep_mode("never"), promptly::sleep_mode::never);
  EXPECT_THROW(promptly::parse_sleep_mode("sometimes"), std::invalid_argument);
}

TEST(Runtime, DefaultWorkerCountIsUsed) {
  promptly::runtime rt;
  EXPECT_EQ(rt.workers(), promptly::default_worker_count());
  EXPECT_EQ(rt.config().steal_bound, 2 * (rt.workers() + 1));
}

TEST(Runtime, RunFromInsideATaskCallsDirectly) {
  promptly::runtime rt;
  EXPECT_EQ(rt.run([&] { return rt.run([] { return 5; }) + 1; }), 6);
}

// The destructor waits for accepted work, including detached asyncs that
// nobody joins; nothing is dropped.
TEST(Runtime, DestructorWaitsForDetachedWork) {
  std::atomic<int> done{0};
  {
    promptly::runtime rt;
    rt.submit([&] {
      for (int i = 0; i < 100; ++i)
        (void)promptly::async([&] {
          std::this_thread::sleep_for(100us);
          done++;
        });
    });
  }
  EXPECT_EQ(done.load(), 100);
}

TEST(Runtime, SubmissionAfterShutdownIsRejected) {
  promptly::runtime rt;
  EXPECT_EQ(rt.submit([] { return 1; }).get(), 1);
  rt.shutdown();
  EXPECT_THROW(rt.submit([] { return 1; }), promptly::runtime_stopped);
  EXPECT_THROW(rt.run([] { return 1; }), promptly::runtime_stopped);
  rt.shutdown();  // idempotent
}

TEST(Runtime, ConcurrentSubmittersDuringShutdownEitherRunOrAreRejected) {
  std::atomic<int> accepted{0}, rejected{0}, ran{0};
  {
    auto rt = std::make_unique<promptly::runtime>();
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t)
      ts.emplace_back([&] {
        for (int i = 0; i < 2000; ++i) {
          try {
            (void)rt->submit([&] { ran++; });
            accepted++;
          } catch (const promptly::runtime_stopped&) {
            rejected++;
          }
        }
      });
    std::this_thread::sleep_for(1ms);
    rt->shutdown();
    for (auto& t : ts) t.join();
  }
  EXPECT_EQ(accepted.load() + rejected.load(), 6000);
  EXPECT_EQ(ran.load(), accepted.load());
}

TEST(Runtime, NeverSleepModeRunsWork) {
  promptly::runtime_config c;
  c.workers = 2;
  c.sleep = promptly::sleep_mode::never;
  promptly::runtime rt(c);
  EXPECT_EQ(rt.run([] {
    auto [a, b] = promptly::join([] { return 1; }, [] { return 2; });
    return a + b;
  }),
            3);
}

// After work ends, an idle runtime sleeps: process CPU time stops growing.
TEST(Runtime, IdleRuntimeUsesNoCpu) {
  if (under_tsan) GTEST_SKIP() << "timing under TSan is not meaningful";
  promptly::runtime_config c;
  c.workers = 2;
  promptly::runtime rt(c);
  rt.run([] { promptly::parallel_for(0, 100000, 100, [](int) {}); });
  std::this_thread::sleep_for(100ms);  // thieves run out of bounds and sleep
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(500ms);
  const double used = process_cpu_seconds() - before;
  // < 2% of one core over 500 ms (the target is < 1%; the slack absorbs clock granularity).
  EXPECT_LT(used, 0.010) << "idle runtime used " << used << " s of CPU in 0.5 s";
}

// Lemma 1 with the bounded nap: a worker that becomes active and only later
// exposes parallelism still gets a second worker. Both branches of the join
// wait for each other, so the test completes only if they run at once.
TEST(Runtime, LateParallelismIsDiscovered) {
  promptly::runtime_config c;
  c.workers = 2;
  promptly::runtime rt(c);
  for (int round = 0; round < 5; ++round) {
    const bool met = rt.run([] {
      std::this_thread::sleep_for(20ms);  // the other worker goes to sleep meanwhile
      std::atomic<int> arrived{0};
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      auto rendezvous = [&] {
        arrived++;
        while (arrived.load() < 2)
          if (std::chrono::steady_clock::now() > deadline) return false;  // nobody stole the other branch
        return true;
      };
      auto [a, b] = promptly::join(rendezvous, rendezvous);
      return a && b;
    });
    EXPECT_TRUE(met) << "round " << round << ": the second branch was never stolen";
  }
}
