// The embedded job server (promptly/server/job_server.hpp): admission,
// exactly one terminal state per job, cancellation and its races, drain,
// destruction, waiting from threads and from tasks, callbacks, expiry,
// classes, stats, and the memory of a queued job.
#include "promptly/server/job_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <new>
#include <map>
#include <mutex>
#include <future>
#include <iostream>
#include <thread>

#include "promptly/ext/policy.hpp"
#include "promptly/io/error.hpp"
#include "promptly/io/timers.hpp"
#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "sched/toolchain.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

// Bytes allocated and not yet freed, by this process: the memory a queued
// job costs is the growth of this while jobs queue. Under a sanitizer its
// allocator counts them (Clang links its own operator new statically, so a
// replacement would not link); otherwise operator new is replaced and every
// block carries its size in a 16-byte header (keeps the alignment).
#if PROMPTLY_UNDER_ASAN || PROMPTLY_UNDER_TSAN
// Declared here: GCC ships no <sanitizer/allocator_interface.h>, but both
// compilers' ASan and TSan runtimes export it.
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
namespace {
std::int64_t live_heap_bytes() { return static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes()); }
}  // namespace
#else
namespace {
std::atomic<std::int64_t> live_heap{0};
constexpr std::size_t heap_header = 16;
std::int64_t live_heap_bytes() { return live_heap.load(); }
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n + heap_header);
  if (p == nullptr) throw std::bad_alloc();
  *static_cast<std::size_t*>(p) = n;
  live_heap.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed);  // relaxed: a statistic
  return static_cast<char*>(p) + heap_header;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  void* base = static_cast<char*>(p) - heap_header;
  live_heap.fetch_sub(static_cast<std::int64_t>(*static_cast<std::size_t*>(base)), std::memory_order_relaxed);  // relaxed: a statistic
  std::free(base);
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }
#endif

namespace srv = promptly::server;
using srv::json;
using srv::job_state;

namespace {

srv::arg_schema n_schema() { return srv::arg_schema{}.integer("n", {.min = 0, .max = 40}); }

json fib_job(srv::job_context& ctx) { return fib(ctx.args()["n"].get<int>()); }

}  // namespace

TEST(JobServer, SubmitWaitReturnsTheResult) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  auto h = s.submit("fib", {{"n", 20}});
  const srv::job_info i = h.wait();
  EXPECT_EQ(i.state, job_state::done);
  EXPECT_EQ(i.result.get<long>(), 6765);
  EXPECT_EQ(i.program, "fib");
  EXPECT_GT(i.timing.flow_us, 0);
  EXPECT_GE(i.timing.flow_us, i.timing.run_us);
  EXPECT_EQ(s.status(h.id()).state, job_state::done);
  EXPECT_EQ(rt.stats().pools.size(), 0u) << "the job's pool was removed";
}

namespace {

// A program that parks until the test opens its gate (a promise).
struct gate {
  promptly::promise<void> p;
  promptly::future<void> f = p.get_future();
  void open() { p.set_value(); }
};


template <class F>
srv::error_code code_of(F&& f) {
  try {
    f();
  } catch (const srv::error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no server::error thrown";
  return srv::error_code::not_allowed;
}

// Spins (yielding) until the job is cancelled, then returns normally: it
// ends cancelled because cancel() was called.
json until_cancelled(srv::job_context& ctx) {
  while (!ctx.cancelled()) std::this_thread::yield();
  return "stopped";
}

}  // namespace

TEST(JobServer, RefusesUnknownProgramsBadArgsAndUnknownClasses) {
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  EXPECT_EQ(code_of([&] { (void)s.submit("nope", {}); }), srv::error_code::unknown_program);
  EXPECT_EQ(code_of([&] { (void)s.submit("fib", {{"n", "30"}}); }), srv::error_code::bad_args);
  EXPECT_EQ(code_of([&] { (void)s.submit("fib", {{"n", 1.5}}); }), srv::error_code::bad_args);
  EXPECT_EQ(code_of([&] { (void)s.submit("fib", {{"n", -1}}); }), srv::error_code::bad_args);
  EXPECT_EQ(code_of([&] { (void)s.submit("fib", {}); }), srv::error_code::bad_args);
  EXPECT_EQ(code_of([&] { (void)s.submit("fib", {{"n", 3}, {"m", 1}}); }), srv::error_code::bad_args);
  EXPECT_EQ(code_of([&] { (void)s.submit("fib", json::array({1, 2})); }), srv::error_code::bad_args);
  EXPECT_EQ(code_of([&] { (void)s.submit("fib", {{"n", 3}}, {.job_class = "gold"}); }), srv::error_code::bad_args);
  const std::string m = what_of([&] { (void)s.submit("fib", {{"n", 41}}); });
  EXPECT_NE(m.find("'n'"), std::string::npos) << m;
  EXPECT_NE(m.find("maximum 40"), std::string::npos) << m;
  EXPECT_NE(what_of([&] { (void)s.submit("fib", {{"n", 3}}, {.job_class = "gold"}); }).find("gold"), std::string::npos);
  const srv::server_stats st = s.stats();
  EXPECT_EQ(st.submitted, 0u) << "nothing refused before admission is counted as submitted";
  EXPECT_THROW(s.register_program("fib", fib_job), std::invalid_argument);
  EXPECT_THROW(s.register_program("", fib_job), std::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)s.status(12345); }), srv::error_code::unknown_job);
}

TEST(JobServer, AdmissionRunsAtMostMaxRunningQueuesFifoAndRejectsBeyond) {
  promptly::runtime rt(config(2, "prompt"));
  gate g;
  std::mutex order_mu;
  std::vector<long> order;
  srv::job_server s(rt, {.max_running = 1, .max_queued = 2});
  s.register_program("gated", [&](srv::job_context& ctx) -> json {
    {
      std::lock_guard lock(order_mu);
      order.push_back(static_cast<long>(ctx.id()));
    }
    g.f.wait();
    return ctx.id();
  });
  auto a = s.submit("gated", {});
  auto b = s.submit("gated", {});
  auto c = s.submit("gated", {});
  EXPECT_EQ(s.status(a.id()).state, job_state::running);
  EXPECT_EQ(s.status(b.id()).state, job_state::queued);
  EXPECT_EQ(s.status(c.id()).state, job_state::queued);
  EXPECT_FALSE(s.ready());
  const std::string full = what_of([&] { (void)s.submit("gated", {}); });
  EXPECT_NE(full.find("queue full (2 queued"), std::string::npos) << full;
  EXPECT_EQ(code_of([&] { (void)s.submit("gated", {}); }), srv::error_code::rejected);
  EXPECT_EQ(s.jobs().size(), 3u);
  g.open();
  for (auto& h : {a, b, c}) EXPECT_EQ(h.wait().state, job_state::done);
  EXPECT_EQ(order, (std::vector<long>{static_cast<long>(a.id()), static_cast<long>(b.id()), static_cast<long>(c.id())}));
  const srv::server_stats st = s.stats();
  EXPECT_EQ(st.submitted, 3u);
  EXPECT_EQ(st.rejected, 2u);
  EXPECT_EQ(st.done, 3u);
  EXPECT_TRUE(s.ready());
}

TEST(JobServer, AThrowingJobFailsAloneWithItsMessage) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  s.register_program("boom", [](srv::job_context&) -> json { throw std::runtime_error("boom at 42"); });
  s.register_program("fib", fib_job, n_schema());
  auto bad = s.submit("boom", {});
  auto good = s.submit("fib", {{"n", 15}});
  const srv::job_info b = bad.wait();
  EXPECT_EQ(b.state, job_state::failed);
  EXPECT_EQ(b.error, "boom at 42");
  EXPECT_TRUE(b.result.is_null());
  EXPECT_EQ(good.wait().result.get<long>(), 610);
  const json j = srv::to_json(b);
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["error"], "boom at 42");
}

// A job ends when its pool drains, not when its root task returns: work the
// program left running (a detached async) finishes first, and the job's
// terminal state (and what waiters see) comes after it.
TEST(JobServer, AJobEndsOnlyAfterTheDetachedWorkItLeftBehind) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  gate g;
  std::atomic<bool> root_returned{false};
  std::atomic<bool> detached_done{false};
  s.register_program("leaves-work", [&](srv::job_context&) -> json {
    (void)promptly::async([&] {
      g.f.wait();  // parks: the pool holds work while no worker runs in it
      detached_done = true;
    });
    root_returned = true;
    return 7;
  });
  std::atomic<int> terminal_saw_detached{-1};  // -1 until the terminal callback ran
  auto h = s.submit("leaves-work", {});
  s.on_terminal(h.id(), [&](const srv::job_info&) { terminal_saw_detached = detached_done.load() ? 1 : 0; });
  ASSERT_TRUE(wait_until([&] { return root_returned.load(); }));
  EXPECT_EQ(s.status(h.id()).state, job_state::running) << "ended before its detached work finished";
  g.open();
  const srv::job_info r = h.wait();
  EXPECT_EQ(r.state, job_state::done);
  EXPECT_EQ(r.result.get<int>(), 7);
  EXPECT_TRUE(detached_done.load());
  ASSERT_TRUE(wait_until([&] { return terminal_saw_detached.load() != -1; }));
  EXPECT_EQ(terminal_saw_detached.load(), 1) << "the terminal callback ran before the detached work finished";
}

TEST(JobServer, CancelQueuedAtOnceAndRunningCooperatively) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt, {.max_running = 1});
  s.register_program("spin", until_cancelled);
  s.register_program("cancel_throws", [](srv::job_context& ctx) -> json {
    for (;;) {
      ctx.throw_if_cancelled();
      std::this_thread::yield();
    }
  });
  auto running = s.submit("spin", {});
  auto queued = s.submit("spin", {});
  EXPECT_TRUE(queued.cancel());
  const srv::job_info q = queued.status();
  EXPECT_EQ(q.state, job_state::cancelled) << "a queued job is cancelled at once";
  EXPECT_FALSE(queued.cancel()) << "already terminal";
  EXPECT_TRUE(running.cancel());
  EXPECT_EQ(running.wait().state, job_state::cancelled);
  EXPECT_FALSE(running.cancel());
  auto thrower = s.submit("cancel_throws", {});
  EXPECT_TRUE(thrower.cancel());
  EXPECT_EQ(thrower.wait().state, job_state::cancelled);
  EXPECT_EQ(s.stats().cancelled, 3u);
  EXPECT_EQ(rt.stats().pools.size(), 0u);
}

TEST(JobServer, CancelRacesWithStartAndFinishEndConsistently) {
  // cancel() returns true exactly for the jobs that end cancelled, whether
  // it lands before the start, while running, or as the root returns.
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt, {.max_running = 2});
  s.register_program("fib", fib_job, n_schema());
  const int rounds = 300;
  int cancelled = 0, done = 0;
  for (int i = 0; i < rounds; ++i) {
    auto a = s.submit("fib", {{"n", 8}});
    auto b = s.submit("fib", {{"n", 8}});
    auto c = s.submit("fib", {{"n", 8}});  // often queued: cancel races with its start
    for (auto& h : {c, a, b}) {
      const bool cancel_won = h.cancel();
      const srv::job_info info = h.wait();
      EXPECT_EQ(cancel_won, info.state == job_state::cancelled) << "job " << h.id();
      if (info.state == job_state::done) {
        EXPECT_EQ(info.result.get<long>(), 21);
        ++done;
      } else {
        ++cancelled;
      }
    }
  }
  const srv::server_stats st = s.stats();
  EXPECT_EQ(st.done + st.cancelled + st.failed, static_cast<std::uint64_t>(3 * rounds));
  EXPECT_EQ(st.failed, 0u);
  EXPECT_EQ(st.running + st.queued, 0u);
}

TEST(JobServer, DrainRejectsNewJobsAndCancelsWhatIsLeftAfterTheTimeout) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt, {.max_running = 1});
  s.register_program("spin", until_cancelled);
  std::vector<srv::job_handle> hs;
  for (int i = 0; i < 4; ++i) hs.push_back(s.submit("spin", {}));
  std::atomic<int> callbacks{0};
  for (auto& h : hs) s.on_terminal(h.id(), [&](const srv::job_info&) { callbacks.fetch_add(1); });
  s.stop_accepting();
  EXPECT_FALSE(s.accepting());
  EXPECT_FALSE(s.ready());
  const std::string m = what_of([&] { (void)s.submit("spin", {}); });
  EXPECT_NE(m.find("draining"), std::string::npos) << m;
  EXPECT_EQ(s.drain(std::chrono::milliseconds(20)), 4u);
  for (auto& h : hs) {
    const srv::job_info i = h.status();
    EXPECT_EQ(i.state, job_state::cancelled);
    EXPECT_NE(i.error.find("drain"), std::string::npos) << i.error;
  }
  EXPECT_EQ(callbacks.load(), 4);
  EXPECT_EQ(s.stats().rejected, 1u);
}

TEST(JobServer, DrainWaitsForJobsThatFinishInTime) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt, {.max_running = 1});
  s.register_program("fib", fib_job, n_schema());
  std::vector<srv::job_handle> hs;
  for (int i = 0; i < 5; ++i) hs.push_back(s.submit("fib", {{"n", 12}}));
  EXPECT_EQ(s.drain(std::chrono::hours(1)), 0u);
  for (auto& h : hs) EXPECT_EQ(h.status().state, job_state::done);
}

TEST(JobServer, DestructionCancelsQueuedAndStopsRunningJobs) {
  promptly::runtime rt(config(2, "prompt"));
  std::vector<std::pair<srv::job_id, job_state>> seen;
  std::mutex mu;
  {
    srv::job_server s(rt, {.max_running = 2});
    s.register_program("spin", until_cancelled);
    for (int i = 0; i < 6; ++i) {
      auto h = s.submit("spin", {});
      s.on_terminal(h.id(), [&](const srv::job_info& i) {
        std::lock_guard lock(mu);
        seen.emplace_back(i.id, i.state);
      });
    }
  }
  ASSERT_EQ(seen.size(), 6u) << "every job reached exactly one terminal state";
  std::sort(seen.begin(), seen.end());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].first, i + 1);
    EXPECT_EQ(seen[i].second, job_state::cancelled);
  }
  EXPECT_EQ(rt.stats().pools.size(), 0u);
}

TEST(JobServer, WaitFromATaskParksInsteadOfBlockingTheWorker) {
  // One worker: if the waiting task blocked its thread, the job could never run.
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  const long v = rt.run([&] {
    auto h = s.submit("fib", {{"n", 18}});
    return h.wait().result.get<long>();
  });
  EXPECT_EQ(v, 2584);
}

TEST(JobServer, WaitForTimesOutFromThreadsAndTasks) {
  promptly::runtime rt(config(1, "prompt"));
  gate g;
  srv::job_server s(rt);
  s.register_program("gated", [&](srv::job_context&) -> json {
    g.f.wait();
    return true;
  });
  auto h = s.submit("gated", {});
  EXPECT_FALSE(h.wait_for(std::chrono::milliseconds(2)));
  EXPECT_FALSE(h.wait_for(std::chrono::nanoseconds(0)));
  EXPECT_FALSE(rt.run([&] { return h.wait_for(std::chrono::milliseconds(2)); })) << "from a task";
  g.open();
  EXPECT_TRUE(rt.run([&] { return h.wait_for(std::chrono::hours(1)); }));
  EXPECT_TRUE(h.wait_for(std::chrono::nanoseconds(0)));
}

TEST(JobServer, OnTerminalFiresOnceAlsoForTerminalJobs) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  auto h = s.submit("fib", {{"n", 10}});
  std::atomic<int> before{0}, after{0};
  s.on_terminal(h.id(), [&](const srv::job_info& i) {
    EXPECT_EQ(i.result.get<long>(), 55);
    before.fetch_add(1);
  });
  (void)h.wait();
  s.on_terminal(h.id(), [&](const srv::job_info& i) {
    EXPECT_EQ(i.state, job_state::done);
    after.fetch_add(1);
  });
  EXPECT_EQ(after.load(), 1) << "a terminal job's callback runs at once";
  // The first may run on the reaper just after wait() returned: wait for it by draining.
  (void)s.drain(std::chrono::hours(1));
  EXPECT_EQ(before.load(), 1);
}

TEST(JobServer, ResultsExpireAfterTheirTtl) {
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt, {.result_ttl = std::chrono::milliseconds(0)});
  s.register_program("fib", fib_job, n_schema());
  auto h = s.submit("fib", {{"n", 5}});
  EXPECT_EQ(h.wait().result.get<long>(), 5) << "wait() returns the result even if it expires at once";
  const std::string m = what_of([&] { (void)h.status(); });
  EXPECT_NE(m.find("expired"), std::string::npos) << m;
  EXPECT_EQ(code_of([&] { (void)s.status(h.id()); }), srv::error_code::unknown_job);
  EXPECT_EQ(code_of([&] { (void)s.status(h.id() + 1); }), srv::error_code::unknown_job);
}

// The handle keeps its job's record: a job that ended and expired before wait() was called
// still gives its result (before, wait() looked the id up and threw "has expired" when the job
// was quicker than the caller: ResultsExpireAfterTheirTtl failed 2 in 300 runs).
TEST(JobServer, AHandleWaitsForAJobThatEndedAndExpiredBeforeTheCall) {
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt, {.result_ttl = std::chrono::milliseconds(0)});
  // The job waits for the test to have registered its callback: a job that ended and expired
  // first would make on_terminal throw unknown_job (it did, under TSan on a loaded machine).
  std::promise<void> go;
  const std::shared_future<void> may_end = go.get_future().share();
  s.register_program("gated", [may_end](srv::job_context&) -> json {
    may_end.wait();
    return 13;
  });
  auto h = s.submit("gated", {});
  std::promise<void> ended;
  s.on_terminal(h.id(), [&](const srv::job_info&) { ended.set_value(); });
  go.set_value();
  ASSERT_EQ(ended.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(code_of([&] { (void)s.status(h.id()); }), srv::error_code::unknown_job) << "expired by id";
  EXPECT_EQ(h.wait().result.get<long>(), 13);
  EXPECT_TRUE(h.wait_for(std::chrono::milliseconds(0)));
}

TEST(JobServer, ClassesMapToPoolRanks) {
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt, {.classes = {{"interactive", 0}, {"batch", 5}}, .default_rank = 3});
  s.register_program("rank", [](srv::job_context& ctx) -> json {
    for (const auto& p : ctx.runtime().stats().pools)
      if (p.id == ctx.pool().id) return p.rank;
    return -1;
  });
  EXPECT_EQ(s.submit("rank", {}, {.job_class = "interactive"}).wait().result.get<int>(), 0);
  EXPECT_EQ(s.submit("rank", {}, {.job_class = "batch"}).wait().result.get<int>(), 5);
  const srv::job_info d = s.submit("rank", {}).wait();
  EXPECT_EQ(d.result.get<int>(), 3);
  EXPECT_EQ(d.job_class, "");
}

// The elastic parameters a job is submitted with reach its pool, as the policy sees it. The
// recording policy lets every core serve every pool (so jobs run) and remembers each pool's parameters; the
// job waits until the policy has seen its pool, so no timing decides the outcome.
class elastic_recorder final : public promptly::ext::policy {
 public:
  std::string_view name() const noexcept override { return "elastic-recorder"; }
  void on_event(const promptly::ext::event&, promptly::ext::decision& d) override {
    for (unsigned c = 0; c < d.core_count(); ++c) d.serve_every_pool(c);
    std::lock_guard lock(mu);
    for (const auto& p : d.pools())
      if (p.elastic) seen[p.id] = *p.elastic;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  std::map<promptly::ext::pool_id, promptly::elastic_params> seen;
};

TEST(JobServer, ElasticParametersReachTheJobsPoolAndBadOnesAreRefused) {
  promptly::runtime rt(config(2, "oblivious"));
  auto owned = std::make_unique<elastic_recorder>();
  elastic_recorder* rec = owned.get();
  rt.set_policy(std::move(owned));
  srv::job_server s(rt);
  s.register_program("declared", [rec](srv::job_context& ctx) -> json {
    std::unique_lock lock(rec->mu);
    if (!rec->cv.wait_for(lock, hang_guard, [&] { return rec->seen.count(ctx.pool().id) > 0; }))
      return "the policy never saw the pool's elastic parameters";
    const auto& e = rec->seen.at(ctx.pool().id);
    return json::array({e.work_ms, e.span_ms, e.period_min_ms, e.period_max_ms, e.elasticity});
  });
  const promptly::elastic_params e{.work_ms = 40, .span_ms = 2, .period_min_ms = 25, .period_max_ms = 60, .elasticity = 3};
  const srv::job_info done = s.submit("declared", {}, {.elastic = e}).wait();
  ASSERT_EQ(done.state, job_state::done) << done.error;
  EXPECT_EQ(done.result, json::array({40.0, 2.0, 25.0, 60.0, 3.0}));

  promptly::elastic_params bad = e;
  bad.period_max_ms = 10;  // below period_min_ms
  const auto submitted = s.stats().submitted;
  try {
    (void)s.submit("declared", {}, {.elastic = bad});
    ADD_FAILURE() << "an inconsistent elastic declaration was accepted";
  } catch (const srv::error& err) {
    EXPECT_EQ(err.code(), srv::error_code::bad_args);
    EXPECT_NE(std::string(err.what()).find("period_max_ms"), std::string::npos) << err.what();
  }
  EXPECT_EQ(s.stats().submitted, submitted);  // refused before it got an id
}

// A running job's status names its pool (the id in runtime_stats), a terminal one none.
TEST(JobServer, ARunningJobsStatusNamesItsPool) {
  promptly::runtime rt(config(2, "oblivious"));
  srv::job_server s(rt);
  std::promise<std::uint32_t> pool_seen;
  std::promise<void> release;
  auto released = release.get_future().share();
  s.register_program("hold", [&](srv::job_context& ctx) -> json {
    pool_seen.set_value(ctx.pool().id);
    released.wait();
    return nullptr;
  });
  const srv::job_handle h = s.submit("hold", {});
  const std::uint32_t pool = pool_seen.get_future().get();
  const srv::job_info running = h.status();
  ASSERT_TRUE(running.pool.has_value());
  EXPECT_EQ(*running.pool, pool);
  EXPECT_EQ(srv::to_json(running)["pool"], pool);
  // The worker running the job serves its pool and is counted, with the
  // work of its open interval (read from the pool's own entry).
  EXPECT_GE(running.cores, 1u);
  EXPECT_GT(h.status().work_s, 0.0);
  release.set_value();
  const srv::job_info done = h.wait();
  EXPECT_FALSE(done.pool.has_value());
  EXPECT_FALSE(srv::to_json(done).contains("pool"));
}

// Periodic tasks: `count` instances released, each counted once as it ends.
TEST(JobServerPeriodic, ReleasesCountInstancesAndCountsEachEnd) {
  promptly::runtime rt(config(2, "equi"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  constexpr auto period = std::chrono::milliseconds(2);
  const auto submitted = std::chrono::steady_clock::now();
  const srv::periodic_id id = s.submit_periodic("fib", {{"n", 10}}, {.period = period, .count = 4});
  ASSERT_TRUE(wait_until([&] { return s.periodic_status(id).done == 4; })) << srv::to_json(s.periodic_status(id));
  const auto periods_passed = static_cast<std::uint64_t>((std::chrono::steady_clock::now() - submitted) / period);
  const srv::periodic_info p = s.periodic_status(id);
  EXPECT_FALSE(p.active);
  EXPECT_EQ(p.released, 4u);
  EXPECT_EQ(p.failed + p.cancelled + p.rejected, 0u);
  // How many met their deadline is the machine's business. A miss is a late instance or a
  // release skipped because the release thread fell a whole period behind (a slow or loaded
  // machine: under TSan it skipped 2), so misses are bounded by the instances plus the grid's
  // periods that passed, not by the instances alone.
  EXPECT_LE(p.missed, p.released + periods_passed) << srv::to_json(p);
  EXPECT_EQ(s.status(p.last_job).result, json(55));
  const auto stats = s.stats();
  ASSERT_EQ(stats.periodic.size(), 1u);
  EXPECT_EQ(srv::to_json(stats)["periodic"][0]["released"], 4);
}

// An instance still running when the next one is released has missed its deadline (its
// deadline is that release): the first instance waits for the test's gate, which opens only
// after the second release, so the miss is certain whatever the machine's speed.
TEST(JobServerPeriodic, AnInstanceEndingAfterTheNextReleaseIsAMiss) {
  promptly::runtime rt(config(2, "oblivious"));
  srv::job_server s(rt);
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  s.register_program("gated", [opened](srv::job_context&) -> json {
    opened.wait();
    return nullptr;
  });
  const srv::periodic_id id = s.submit_periodic("gated", {}, {.period = std::chrono::milliseconds(1), .count = 2});
  ASSERT_TRUE(wait_until([&] { return s.periodic_status(id).released == 2; }));
  gate.set_value();
  ASSERT_TRUE(wait_until([&] { return s.periodic_status(id).done == 2; }));
  EXPECT_GE(s.periodic_status(id).missed, 1u);
}

TEST(JobServerPeriodic, BadTasksAreRefusedBeforeTheyGetAnId) {
  promptly::runtime rt(config(1, "equi"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  const auto code_of = [&](auto&& f) {
    try {
      f();
    } catch (const srv::error& e) {
      return std::string(srv::to_string(e.code())) + ": " + e.what();
    }
    return std::string("no error");
  };
  EXPECT_EQ(code_of([&] { (void)s.submit_periodic("nope", {}, {.period = std::chrono::milliseconds(5)}); }).rfind("unknown_program", 0), 0u);
  EXPECT_EQ(code_of([&] { (void)s.submit_periodic("fib", {{"n", -1}}, {.period = std::chrono::milliseconds(5)}); }).rfind("bad_args", 0), 0u);
  const std::string tiny = code_of([&] { (void)s.submit_periodic("fib", {{"n", 1}}, {.period = std::chrono::microseconds(50)}); });
  EXPECT_NE(tiny.find("at least 100 us"), std::string::npos) << tiny;
  EXPECT_EQ(code_of([&] { (void)s.periodic_status(1); }).rfind("unknown_job", 0), 0u);  // no task was made
  EXPECT_TRUE(s.stats().periodic.empty());
  // Resource exhaustion: 256 active tasks, the next one is rejected, a cancelled one frees a place.
  std::vector<srv::periodic_id> ids;
  for (int i = 0; i < 256; ++i) ids.push_back(s.submit_periodic("fib", {{"n", 1}}, {.period = std::chrono::hours(1)}));
  const std::string full = code_of([&] { (void)s.submit_periodic("fib", {{"n", 1}}, {.period = std::chrono::hours(1)}); });
  EXPECT_EQ(full.rfind("rejected", 0), 0u) << full;
  EXPECT_NE(full.find("too many periodic tasks"), std::string::npos) << full;
  EXPECT_TRUE(s.cancel_periodic(ids.back()));
  EXPECT_NO_THROW((void)s.submit_periodic("fib", {{"n", 1}}, {.period = std::chrono::hours(1)}));
}

// Cancelling stops the releases (a release already under way may still land); draining ends
// every task; destroying the server with an active task neither hangs nor loses an instance.
TEST(JobServerPeriodic, CancelAndDrainEndTheReleases) {
  promptly::runtime rt(config(2, "equi"));
  auto s = std::make_unique<srv::job_server>(rt);
  s->register_program("fib", fib_job, n_schema());
  const auto period = std::chrono::microseconds(500);
  const srv::periodic_id a = s->submit_periodic("fib", {{"n", 5}}, {.period = period});
  const srv::periodic_id b = s->submit_periodic("fib", {{"n", 5}}, {.period = period});
  ASSERT_TRUE(wait_until([&] { return s->periodic_status(a).released >= 3 && s->periodic_status(b).released >= 3; }));
  EXPECT_TRUE(s->cancel_periodic(a));
  const auto at_cancel = s->periodic_status(a).released;
  EXPECT_FALSE(s->cancel_periodic(a));
  s->stop_accepting();
  EXPECT_FALSE(s->periodic_status(b).active);
  const auto settled = [&](srv::periodic_id id) {
    const auto p = s->periodic_status(id);
    return p.released == p.done + p.failed + p.cancelled + p.rejected;
  };
  ASSERT_TRUE(wait_until([&] { return settled(a) && settled(b); }));
  EXPECT_LE(s->periodic_status(a).released, at_cancel + 1);
  // A third task alive at destruction.
  srv::job_server other(rt);
  other.register_program("fib", fib_job, n_schema());
  (void)other.submit_periodic("fib", {{"n", 5}}, {.period = period});
  s.reset();
}

TEST(JobServer, StatsCountEveryJobAndReportOverheads) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  s.register_program("boom", [](srv::job_context&) -> json { throw std::runtime_error("x"); });
  gate g;
  s.register_program("gated", [&](srv::job_context&) -> json {
    g.f.wait();
    return 1;
  });
  for (int i = 0; i < 20; ++i) (void)s.submit("fib", {{"n", 10}}).wait();
  (void)s.submit("boom", {}).wait();
  auto running = s.submit("gated", {});
  const srv::server_stats st = s.stats();
  EXPECT_EQ(st.submitted, 22u);
  EXPECT_EQ(st.done, 20u);
  EXPECT_EQ(st.failed, 1u);
  EXPECT_EQ(st.running, 1u);
  ASSERT_EQ(st.jobs.size(), 1u);
  EXPECT_EQ(st.jobs[0].id, running.id());
  EXPECT_GT(st.flow_p50_us, 0);
  EXPECT_GE(st.flow_p99_us, st.flow_p50_us);
  EXPECT_EQ(st.start.samples, 21u) << "one start sample per job that started and was removed";
  EXPECT_EQ(st.remove.samples, 21u);
  EXPECT_EQ(st.setup.samples, 21u);
  EXPECT_EQ(st.end.samples, 21u);
  EXPECT_GT(st.start.p50_us, 0);
  EXPECT_GT(st.setup.p50_us, 0);
  EXPECT_LE(st.setup.max_us, st.start.max_us) << "setup is the first part of start";
  bool found = false;
  for (const auto& p : st.programs)
    if (p.program == "fib") {
      found = true;
      EXPECT_EQ(p.done, 20u);
      EXPECT_GT(p.flow_mean_us, 0);
    }
  EXPECT_TRUE(found);
  const json j = srv::to_json(st);
  EXPECT_EQ(j["done"], 20);
  EXPECT_EQ(j["jobs"].size(), 1u);
  EXPECT_TRUE(j["overheads"]["start"].contains("p99_us"));
  EXPECT_TRUE(j["overheads"]["setup"].contains("p99_us"));
  g.open();
  const srv::job_info r = running.wait();
  EXPECT_GT(r.timing.start_us, 0);
  EXPECT_GT(r.timing.setup_us, 0);
  EXPECT_LE(r.timing.setup_us, r.timing.start_us);
  EXPECT_GT(r.timing.remove_us, 0);
  // end_us runs from the root's return to the terminal state: it holds
  // the removal.
  EXPECT_GE(r.timing.end_us, r.timing.remove_us);
  EXPECT_EQ(srv::to_json(r)["timing"]["setup_us"], r.timing.setup_us);
  EXPECT_EQ(srv::to_json(r)["timing"]["end_us"], r.timing.end_us);
  const srv::server_stats after = s.stats();
  EXPECT_GE(after.end.max_us, after.remove.max_us);
  EXPECT_GT(after.end.p50_us, 0);
  EXPECT_TRUE(srv::to_json(after)["overheads"]["end"].contains("p99_us"));
}

TEST(JobServer, ConcurrentSubmittersAndCancellersSeeExactlyOneTerminalStatePerJob) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt, {.max_running = 4, .max_queued = 64});
  s.register_program("fib", fib_job, n_schema());
  std::mutex mu;
  std::map<srv::job_id, int> terminal_calls;
  std::atomic<std::uint64_t> rejected{0};
  const int per_thread = 150;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        try {
          auto h = s.submit("fib", {{"n", 6 + (i % 5)}});
          s.on_terminal(h.id(), [&](const srv::job_info& info) {
            std::lock_guard lock(mu);
            ++terminal_calls[info.id];
          });
          if ((i + t) % 3 == 0) (void)h.cancel();
        } catch (const srv::error& e) {
          EXPECT_EQ(e.code(), srv::error_code::rejected);
          rejected.fetch_add(1);
        }
      }
    });
  for (auto& t : ts) t.join();
  (void)s.drain(std::chrono::hours(1));
  const srv::server_stats st = s.stats();
  EXPECT_EQ(st.submitted + st.rejected, static_cast<std::uint64_t>(4 * per_thread));
  EXPECT_EQ(st.rejected, rejected.load());
  EXPECT_EQ(st.done + st.cancelled, st.submitted);
  std::lock_guard lock(mu);
  EXPECT_EQ(terminal_calls.size(), st.submitted);
  for (const auto& [id, n] : terminal_calls) EXPECT_EQ(n, 1) << "job " << id;
}

TEST(JobServer, SetPolicySwitchesTheRuntimesPolicy) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  s.set_policy("aps");
  EXPECT_EQ(rt.policy(), "aps");
  EXPECT_THROW(s.set_policy("no-such-policy"), std::invalid_argument);
  EXPECT_THROW(s.set_cores(3), std::invalid_argument);
}

TEST(JobServer, SetCoresLimitsTheRuntimeAndJobsStillFinish) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  s.set_cores(1);
  EXPECT_EQ(rt.core_limit(), 1u);
  EXPECT_EQ(s.stats().core_limit, 1u);
  std::vector<srv::job_handle> hs;
  for (int i = 0; i < 4; ++i) hs.push_back(s.submit("fib", {{"n", 18}}));
  for (auto& h : hs) EXPECT_EQ(h.wait().result.get<long>(), 2584);
  s.set_cores(0);
  EXPECT_EQ(rt.core_limit(), 0u);
  EXPECT_EQ(to_json(s.stats())["core_limit"], 0);
}

TEST(JobServer, AnIdleQueuedJobCostsAtMostTwoKibibytes) {
  // The record, its validated args (two small arguments), its table entry
  // and its queue slot, measured as heap growth over 1000 queued jobs.
  promptly::runtime rt(config(1, "prompt"));
  gate g;
  const std::size_t jobs = 1000;
  srv::job_server s(rt, {.max_running = 1, .max_queued = jobs});
  s.register_program("gated", [&](srv::job_context&) -> json {
    g.f.wait();
    return 0;
  }, srv::arg_schema{}.integer("n", {.min = 0, .max = 1000000}).string("tag", {.max_length = 16, .default_value = "x"}));
  auto first = s.submit("gated", {{"n", 1}});  // runs and parks: the rest queue
  std::vector<srv::job_handle> hs;
  hs.reserve(jobs);
  const json args = {{"n", 123456}, {"tag", "queued"}};
  const std::int64_t before = live_heap_bytes();
  for (std::size_t i = 0; i < jobs; ++i) hs.push_back(s.submit("gated", args));
  const std::int64_t per_job = (live_heap_bytes() - before) / static_cast<std::int64_t>(jobs);
  EXPECT_EQ(s.stats().queued, jobs);
  std::cout << "[ measured ] an idle queued job costs " << per_job << " bytes of heap\n";
  EXPECT_LE(per_job, 2048);
  EXPECT_GT(per_job, 0);
  g.open();
  for (auto& h : hs) EXPECT_EQ(h.wait().state, job_state::done);
  EXPECT_EQ(first.wait().state, job_state::done);
}

namespace {

// The timing fields of one job (docs/server.md, "The job object"): four
// instants, accepted <= root started <= root returned <= terminal, and the
// fields are the spans between them, so they add up to the flow time.
void expect_consistent_timing(const srv::job_info& i) {
  const srv::job_timing& t = i.timing;
  SCOPED_TRACE("job " + std::to_string(i.id) + " " + std::string(srv::to_string(i.state)) + ": " +
               srv::to_json(i)["timing"].dump());
  for (const double f : {t.queued_us, t.run_us, t.flow_us, t.start_us, t.setup_us, t.remove_us, t.end_us}) EXPECT_GE(f, 0);
  const double eps = 1e-6 * t.flow_us + 1e-3;  // the double rounding of three nanosecond spans
  EXPECT_NEAR(t.queued_us + t.run_us + t.end_us, t.flow_us, eps);
  EXPECT_LE(t.queued_us + t.run_us, t.flow_us + eps);
  EXPECT_LE(t.end_us, t.flow_us + eps);
  if (!srv::is_terminal(i.state)) EXPECT_EQ(t.end_us, 0) << "end_us is measured at the end";
  if (t.start_us > 0) {  // the root started: the overheads are parts of the spans
    EXPECT_LE(t.start_us, t.queued_us + eps) << "the start decision comes after the acceptance";
    EXPECT_LE(t.setup_us, t.start_us);
    EXPECT_LE(t.remove_us, t.end_us);
  } else if (srv::is_terminal(i.state)) {
    EXPECT_EQ(t.run_us, 0);
    EXPECT_EQ(t.end_us, 0);
    EXPECT_NEAR(t.queued_us, t.flow_us, eps) << "a job that never started was queued all its life";
  }
}

}  // namespace

TEST(JobServer, TimingFieldsAddUpToTheFlowTimeOfEveryJob) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt, {.max_running = 2, .max_queued = 1024});
  s.register_program("fib", fib_job, n_schema());
  s.register_program("boom", [](srv::job_context&) -> json { throw std::runtime_error("boom"); });
  // A job that leaves detached work behind: its end (root returned ->
  // terminal) includes the wait for that work.
  s.register_program("detach", [](srv::job_context&) -> json {
    (void)promptly::async([] { return fib(16); });
    return 0;
  });
  std::vector<srv::job_handle> hs;
  const int jobs = 300;
  for (int i = 0; i < jobs; ++i) {
    const char* program = i % 10 == 9 ? "boom" : i % 10 == 8 ? "detach" : "fib";
    hs.push_back(s.submit(program, i % 10 >= 8 ? json::object() : json{{"n", i % 14}}));
    if (i % 4 == 1) (void)hs.back().cancel();  // queued (cancelled at once) or running
  }
  for (const srv::job_info& live : s.jobs()) expect_consistent_timing(live);
  int started = 0, never_started = 0;
  for (auto& h : hs) {
    const srv::job_info i = h.wait();
    expect_consistent_timing(i);
    (i.timing.start_us > 0 ? started : never_started) += 1;
    const srv::job_info again = s.status(h.id());
    EXPECT_EQ(again.timing.flow_us, i.timing.flow_us) << "a terminal job's timing does not change";
  }
  EXPECT_GT(started, 0);
  std::cout << "[ measured ] " << started << " jobs started, " << never_started << " cancelled while queued\n";
}

namespace {

// Registers `name`: it signals `entered` (returned), then runs `body`.
std::future<void> register_signalling(srv::job_server& s, const std::string& name, std::function<json(srv::job_context&)> body) {
  auto entered = std::make_shared<std::promise<void>>();
  std::future<void> f = entered->get_future();
  s.register_program(name, [entered, body = std::move(body)](srv::job_context& ctx) -> json {
    entered->set_value();
    return body(ctx);
  });
  return f;
}

}  // namespace

TEST(JobServer, CancelWakesAJobParkedInItsCancellableWaits) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  gate never;  // a future nobody completes until the end of the test
  const std::vector<std::pair<std::string, std::function<json(srv::job_context&)>>> parks{
      {"sleep_for", [](srv::job_context& ctx) -> json { ctx.sleep_for(std::chrono::hours(1)); return 0; }},
      {"wait", [&](srv::job_context& ctx) -> json { ctx.wait(never.f); return 0; }},
      {"wait_for", [&](srv::job_context& ctx) -> json { return ctx.wait_for(never.f, std::chrono::hours(1)); }},
      {"io_with_the_stop_token", [](srv::job_context& ctx) -> json {
         promptly::io::sleep_for(std::chrono::hours(1), ctx.stop_token()).get();
         return 0;
       }},
  };
  for (const auto& [name, park] : parks) {
    std::future<void> entered = register_signalling(s, name, park);
    auto h = s.submit(name, {});
    ASSERT_EQ(entered.wait_for(hang_guard), std::future_status::ready) << name;
    EXPECT_TRUE(h.cancel()) << name;
    watchdog dog(std::chrono::seconds(10), "a job parked in " + name + " after its cancel");
    const srv::job_info i = h.wait();
    EXPECT_EQ(i.state, job_state::cancelled) << name << ": " << i.error;
    EXPECT_NE(i.error.find("cancelled"), std::string::npos) << name << ": " << i.error;
    EXPECT_FALSE(i.cancel_requested) << "stopped: no longer a request";
  }
  never.open();
  EXPECT_EQ(s.stats().cancelled, parks.size());
}

TEST(JobServer, ContextWaitsReturnWhenTheJobIsNotCancelled) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  gate never;
  s.register_program("waits", [&](srv::job_context& ctx) -> json {
    const bool timed_out = !ctx.wait_for(never.f, std::chrono::milliseconds(2));
    const auto t0 = std::chrono::steady_clock::now();
    ctx.sleep_for(std::chrono::microseconds(300));
    const bool slept = std::chrono::steady_clock::now() - t0 >= std::chrono::microseconds(300);
    const int value = ctx.wait(promptly::async([] { return 7; }));
    const bool ready = ctx.wait_for(promptly::async([] { return 8; }), std::chrono::hours(1));
    promptly::future<int> empty;
    bool empty_throws = false;
    try {
      (void)ctx.wait(empty);
    } catch (const promptly::future_empty&) {
      empty_throws = true;
    }
    return {{"timed_out", timed_out}, {"slept", slept}, {"value", value}, {"ready", ready}, {"empty_throws", empty_throws}};
  });
  const srv::job_info i = s.submit("waits", {}).wait();
  ASSERT_EQ(i.state, job_state::done) << i.error;
  EXPECT_EQ(i.result, (json{{"timed_out", true}, {"slept", true}, {"value", 7}, {"ready", true}, {"empty_throws", true}}));
  never.open();
}

TEST(JobServer, AJobThatIgnoresCancellationStaysRunningWithCancelRequested) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  std::atomic<bool> release{false};
  std::future<void> entered = register_signalling(s, "stubborn", [&](srv::job_context&) -> json {
    while (!release.load()) std::this_thread::yield();
    return 1;
  });
  auto h = s.submit("stubborn", {});
  ASSERT_EQ(entered.wait_for(hang_guard), std::future_status::ready);
  EXPECT_TRUE(h.cancel());
  const srv::job_info running = h.status();
  EXPECT_EQ(running.state, job_state::running) << "it has not stopped";
  EXPECT_TRUE(running.cancel_requested);
  EXPECT_EQ(srv::to_json(running)["cancel_requested"], true);
  EXPECT_EQ(s.jobs().at(0).cancel_requested, true);
  EXPECT_TRUE(h.cancel()) << "it will still end cancelled";
  release.store(true);
  const srv::job_info end = h.wait();
  EXPECT_EQ(end.state, job_state::cancelled);
  EXPECT_FALSE(end.cancel_requested);
  EXPECT_FALSE(srv::to_json(end).contains("cancel_requested"));
}

TEST(JobServer, DrainWithinAbandonsJobsThatIgnoreCancellation) {
  // equi: a core for each of the three running jobs (under prompt the
  // spinning oldest job would hold every core and the others never start).
  promptly::runtime rt(config(3, "equi"));
  std::atomic<bool> release{false};
  srv::job_server s(rt, {.max_running = 3});
  std::future<void> entered = register_signalling(s, "stubborn", [&](srv::job_context&) -> json {
    while (!release.load()) std::this_thread::yield();
    return 1;
  });
  std::atomic<int> others_started{0};
  s.register_program("sleeper", [&](srv::job_context& ctx) -> json {
    others_started.fetch_add(1);
    ctx.sleep_for(std::chrono::hours(1));
    return 0;
  });
  s.register_program("spin", [&](srv::job_context& ctx) -> json {
    others_started.fetch_add(1);
    return until_cancelled(ctx);
  });
  // Released on every exit, a failed assertion's too: else the server's
  // destructor would wait for the stubborn job for ever.
  struct release_at_exit {
    std::atomic<bool>& flag;
    ~release_at_exit() { flag.store(true); }
  } releaser{release};
  auto stubborn = s.submit("stubborn", {});
  auto sleeper = s.submit("sleeper", {});
  auto spin = s.submit("spin", {});
  auto queued = s.submit("spin", {});
  ASSERT_EQ(entered.wait_for(hang_guard), std::future_status::ready);
  // Every running job has started before the drain, so each has a core that
  // will see its cancellation. The stubborn and spinning jobs never reach a
  // strand boundary: a core equi gave another job may stay held in their
  // strands, and equi must give that job a core free to move.
  ASSERT_TRUE(wait_until([&] { return others_started.load() == 2; }))
      << "the sleeper and a spinning job have not both started: " << others_started.load() << " did\n"
      << describe(rt);
  srv::job_server::drain_report r;
  {
    watchdog dog(std::chrono::seconds(30), "drain_within with a job that ignores cancellation");
    // The grace always runs out (the stubborn job never stops): long enough
    // for the others to notice their cancellation on a loaded machine (1 s
    // was not, once, under ASan beside other tests).
    r = s.drain_within(std::chrono::milliseconds(20), std::chrono::milliseconds(5000));
  }
  EXPECT_EQ(r.cancelled, 4u);
  std::string abandoned;  // which jobs, for a failure's message
  for (const auto& j : r.abandoned) abandoned += " " + std::to_string(j.id) + ":" + j.program + ":" + std::string(to_string(j.state));
  ASSERT_EQ(r.abandoned.size(), 1u) << "abandoned:" << abandoned << " (stubborn " << stubborn.id() << ")";
  EXPECT_EQ(r.abandoned[0].id, stubborn.id());
  EXPECT_EQ(r.abandoned[0].state, job_state::running);
  EXPECT_TRUE(r.abandoned[0].cancel_requested);
  for (auto* h : {&sleeper, &spin, &queued}) EXPECT_EQ(h->status().state, job_state::cancelled) << h->id();
  release.store(true);  // else the server's destructor would wait for it
  EXPECT_EQ(stubborn.wait().state, job_state::cancelled);
}
