// runtime::on_drained: a notice runs once, at a moment the pool holds no
// counted work and no worker runs in it; never while a task of the pool
// runs, never twice, never for the next pool on the same id; removal and
// shutdown run what is left; bad input gets a clear error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using namespace std::chrono_literals;

namespace {

// One slot per notice a test registers: how often it ran.
struct notice_log {
  explicit notice_log(std::size_t n) : runs(n) {}
  std::vector<std::atomic<int>> runs;
  std::function<void()> notice(std::size_t i) {
    return [this, i] { runs[i].fetch_add(1); };
  }
};

}  // namespace

TEST(DrainNotices, BadInputGetsAClearError) {
  promptly::runtime rt(config(2, "prompt"));
  const promptly::pool p = rt.create_pool();
  EXPECT_NE(what_of<std::invalid_argument>([&] { rt.on_drained(p, {}); }).find("empty"), std::string::npos);
  EXPECT_NE(what_of<std::out_of_range>([&] { rt.on_drained(promptly::pool(999), [] {}); }).find("pool 999"),
            std::string::npos);
  rt.remove_pool(p);
  EXPECT_NE(what_of<std::out_of_range>([&] { rt.on_drained(p, [] {}); }).find("removed"), std::string::npos);
}

// A pool with nothing in it is drained: the notice runs on the caller
// before on_drained returns.
TEST(DrainNotices, AnIdlePoolRunsTheNoticeOnTheCaller) {
  promptly::runtime rt(config(2, "prompt"));
  const promptly::pool p = rt.create_pool();
  std::thread::id ran_on;
  rt.on_drained(p, [&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  rt.remove_pool(p);
}

// The notice waits for the pool's last task, detached work included, and
// runs once; a drained pool takes work again, and a new notice hears of
// the next drain.
TEST(DrainNotices, TheNoticeWaitsForEveryTaskAndRunsOnce) {
  promptly::runtime rt(config(2, "prompt"));
  watchdog guard(60s, "drain notice", [&] { return describe(rt); });
  const promptly::pool p = rt.create_pool();
  promptly::promise<void> gate;
  auto gated = gate.get_future();
  std::atomic<bool> detached_done{false};
  std::atomic<bool> running{false};
  (void)rt.submit(p, [&, gated] {
    (void)promptly::async([&, gated] {  // detached: outlives the root
      running = true;
      gated.get();  // parks the task: the pool holds work, no worker runs in it
      detached_done = true;
    });
  });
  ASSERT_TRUE(wait_until([&] { return running.load(); }));
  std::atomic<int> runs{0};
  std::atomic<bool> saw_work_done{false};
  rt.on_drained(p, [&] {
    saw_work_done = detached_done.load();
    runs.fetch_add(1);
  });
  EXPECT_EQ(runs.load(), 0) << "ran while a task of the pool was parked";
  gate.set_value();
  ASSERT_TRUE(wait_until([&] { return runs.load() == 1; }));
  EXPECT_TRUE(saw_work_done.load()) << "ran before the pool's last task finished";
  // Work again, and a second notice: it runs on that drain; the first one
  // does not run again.
  std::atomic<int> second{0};
  auto f = rt.submit(p, [&] {
    rt.on_drained(p, [&] { second.fetch_add(1); });  // from a task of the pool itself
    return second.load();
  });
  EXPECT_EQ(f.get(), 0) << "the notice ran while the task that registered it was running";
  ASSERT_TRUE(wait_until([&] { return second.load() == 1; }));
  EXPECT_EQ(runs.load(), 1);
  rt.remove_pool(p);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(second.load(), 1);
}

// A pool flipping empty / non-empty, with a notice registered each time it
// holds work: each runs exactly once, after its round's task.
TEST(DrainNotices, APoolFlippingEmptyAndBusyRunsEachNoticeOnce) {
  promptly::runtime rt(config(2, "aps"));
  watchdog guard(60s, "flipping pool", [&] { return describe(rt); });
  const promptly::pool p = rt.create_pool({.rank = 1});
  const std::size_t rounds = scaled(2000);
  notice_log log(rounds);
  std::vector<std::atomic<int>> task_done(rounds);
  for (std::size_t i = 0; i < rounds; ++i) {
    promptly::promise<void> gate;
    auto gated = gate.get_future();
    (void)rt.submit(p, [&, i, gated] {
      gated.get();
      task_done[i] = 1;
    });
    rt.on_drained(p, [&, i] {
      EXPECT_EQ(task_done[i].load(), 1) << "round " << i << ": ran before the round's task finished";
      log.runs[i].fetch_add(1);
    });
    if (i % 2 == 0) gate.set_value();  // released from here, or (odd rounds) from a task of level 0
    else (void)rt.submit(promptly::level{0}, [g = std::move(gate)]() mutable { g.set_value(); });
    ASSERT_TRUE(wait_until([&] { return log.runs[i].load() >= 1; })) << "round " << i;
  }
  rt.remove_pool(p);
  for (std::size_t i = 0; i < rounds; ++i) ASSERT_EQ(log.runs[i].load(), 1) << "round " << i;
}

// remove_pool while a notice waits on the pool's parked work: the notice
// runs once, and the next pool made (which may take the same id) never runs
// it again.
TEST(DrainNotices, RemovalRunsTheWaitingNoticeOnceAndNotForTheNextPool) {
  promptly::runtime rt(config(2, "prompt"));
  watchdog guard(60s, "removal with notices", [&] { return describe(rt); });
  for (int round = 0; round < 50; ++round) {
    const promptly::pool p = rt.create_pool();
    promptly::promise<int> gate;
    auto gated = gate.get_future();
    auto waiting = rt.submit(p, [gated] { return gated.get(); });
    std::atomic<int> runs{0};
    rt.on_drained(p, [&] { runs.fetch_add(1); });
    std::thread remover([&] { rt.remove_pool(p); });
    // The remover is closing the pool once the pool refuses work.
    ASSERT_TRUE(wait_until([&] { return refuses_work(rt, p); }));
    EXPECT_EQ(runs.load(), 0);
    gate.set_value(round);
    remover.join();
    ASSERT_TRUE(wait_until([&] { return runs.load() >= 1; }));  // perhaps still running on the worker that drained p
    EXPECT_EQ(runs.load(), 1);
    EXPECT_EQ(waiting.get(), round);
    const promptly::pool next = rt.create_pool();
    rt.submit(next, [] {}).get();
    std::atomic<int> next_runs{0};
    rt.on_drained(next, [&] { next_runs.fetch_add(1); });
    ASSERT_TRUE(wait_until([&] { return next_runs.load() == 1; }));
    rt.remove_pool(next);
    EXPECT_EQ(runs.load(), 1) << "a removed pool's notice ran for the next pool";
  }
}

// A notice still running on a worker when remove_pool is called: the
// removal neither waits for it (the contract: a notice owns what it uses)
// nor runs it again; none is left registered, and the removed pool refuses
// new notices.
TEST(DrainNotices, RemovalDoesNotWaitForANoticeAWorkerIsRunning) {
  promptly::runtime rt(config(2, "prompt"));
  watchdog guard(60s, "removal beside a running notice", [&] { return describe(rt); });
  const promptly::pool p = rt.create_pool({.rank = 2});
  promptly::promise<void> gate;
  auto gated = gate.get_future();
  (void)rt.submit(p, [gated] { gated.get(); });
  auto state = std::make_shared<std::atomic<int>>(0);  // 1 = in the notice, 2 = left it; owned by the notice too
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto runs = std::make_shared<std::atomic<int>>(0);
  rt.on_drained(p, [state, release, runs] {
    runs->fetch_add(1);
    state->store(1);
    while (!release->load()) std::this_thread::yield();  // holds its worker, briefly
    state->store(2);
  });
  gate.set_value();
  ASSERT_TRUE(wait_until([&] { return state->load() == 1; }));  // p is drained; its notice runs
  rt.remove_pool(p);  // returns with the notice still running (a wait would hang here)
  EXPECT_EQ(state->load(), 1);
  EXPECT_THROW(rt.on_drained(p, [] {}), std::out_of_range);
  release->store(true);
  ASSERT_TRUE(wait_until([&] { return state->load() == 2; }));
  const promptly::pool next = rt.create_pool();
  rt.submit(next, [] {}).get();
  rt.remove_pool(next);
  EXPECT_EQ(runs->load(), 1);
}

// The attack: one thread submits to a pool and another registers notices
// on it (the pool flips busy / drained under them) while a third removes
// it. Every registration that returned runs its notice exactly once; the
// one refused (out_of_range: the pool was gone) never runs; and remove_pool
// ends under the stream of registrations. Then the same again on the next
// pool, which may reuse the id.
TEST(DrainNotices, RegistrationsRacingSubmissionsAndRemovalEachRunOnce) {
  promptly::runtime rt(config(2, "prompt"));
  watchdog guard(120s, "notices racing removal", [&] { return describe(rt); });
  for (int round = 0; round < static_cast<int>(scaled(100, 4)); ++round) {
    const promptly::pool p = rt.create_pool();
    std::deque<std::atomic<int>> runs;  // grows at the back: a notice's slot stays put
    std::atomic<std::size_t> registered{0};
    std::atomic<std::size_t> submitted{0};
    std::atomic<bool> submitter_done{false};
    std::atomic<bool> refused{false};
    std::atomic<std::size_t> ran{0};  // notices run (the slots say which)
    std::atomic<std::size_t> finished{0};
    std::thread submitter([&] {
      for (;;) {
        // At most 64 tasks queued: the pool keeps flipping busy / drained,
        // and the removal does not wait behind a flood.
        while (submitted.load() - finished.load() > 64) std::this_thread::yield();
        try {
          (void)rt.submit(p, [&finished] {
            promptly::yield();
            finished.fetch_add(1);
          });
          submitted.fetch_add(1);
        } catch (const promptly::pool_removed&) {
          break;
        } catch (const std::out_of_range&) {
          break;
        }
      }
      submitter_done = true;
    });
    std::thread registrar([&] {
      for (std::size_t i = 0;; ++i) {
        // Keep pace with the submissions (a notice per one), so that the
        // registrations go on while the pool drains and is removed.
        while (submitted.load() < i && !submitter_done.load()) std::this_thread::yield();
        std::atomic<int>* slot = &runs.emplace_back(0);
        try {
          rt.on_drained(p, [slot, &ran] {
            slot->fetch_add(1);
            ran.fetch_add(1);
          });
          registered.store(i + 1);
        } catch (const std::out_of_range&) {
          refused = true;
          return;
        }
      }
    });
    // Remove once both sides are under way.
    ASSERT_TRUE(wait_until([&] { return registered.load() >= 20 && submitted.load() >= 20; }));
    rt.remove_pool(p);
    submitter.join();
    registrar.join();
    EXPECT_TRUE(refused.load());
    const std::size_t n = registered.load();
    // Notices other threads took may still be running (nothing waits for them).
    ASSERT_TRUE(wait_until([&] { return ran.load() >= n; })) << "round " << round << ": " << ran.load() << " of " << n << " ran";
    ASSERT_EQ(runs.size(), n + 1) << "the registrar's last try was refused";
    for (std::size_t i = 0; i < runs.size(); ++i)
      ASSERT_EQ(runs[i].load(), i < n ? 1 : 0) << "round " << round << ", notice " << i << " of " << n << " registered";
  }
}

// Shutdown under load: pools and levels with work and notices; every
// notice runs exactly once, by the time the runtime is gone.
TEST(DrainNotices, ShutdownUnderLoadRunsEveryNoticeOnce) {
  const std::size_t pools = 6, per_pool = 3;
  notice_log log((pools + 1) * per_pool);
  {
    promptly::runtime rt(config(2, "prompt"));
    std::vector<promptly::pool> made;
    for (std::size_t k = 0; k < pools; ++k) made.push_back(rt.create_pool({.rank = static_cast<unsigned>(k % 3)}));
    made.push_back(promptly::level{2});  // a level drains too
    for (std::size_t k = 0; k < made.size(); ++k) {
      for (int t = 0; t < 4; ++t)
        (void)rt.submit(made[k], [] {
          (void)promptly::async([] { (void)fib(14); });  // detached, still running at shutdown
          (void)fib(16);
        });
      for (std::size_t j = 0; j < per_pool; ++j) rt.on_drained(made[k], log.notice(k * per_pool + j));
    }
  }  // shutdown: every task runs, then every pool is drained
  for (std::size_t i = 0; i < log.runs.size(); ++i) EXPECT_EQ(log.runs[i].load(), 1) << "notice " << i;
}

// A notice must not throw: the process ends (as the runtime documents),
// rather than a lost or half-run notice.
TEST(DrainNoticesDeathTest, ANoticeThatThrowsTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        promptly::runtime rt(config(1, "prompt"));
        const promptly::pool p = rt.create_pool();
        rt.on_drained(p, [] { throw std::runtime_error("notice failed"); });
      },
      "notice failed");
}
