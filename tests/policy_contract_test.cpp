// The contract between the runtime and a policy (docs/policies.md): events
// about pools gone since, a policy that throws, a decision applied all or
// nothing, work that no core will serve, the largest quantum, CPU time
// beside wall time, and what the decision latency samples.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "policy_support.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

using namespace std::chrono_literals;
namespace ext = promptly::ext;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Gives every core to the pools with ready work (allot: pools not named get
// none, so work runs only once a decision saw it), and core 0 to a pool
// that asks for cores. While armed, the decision on the next pool_added
// waits for the test to open the gate: the events posted meanwhile reach
// the policy together, in the next batch.
struct serves_requests final : ext::policy {
  std::string_view name() const noexcept override { return "serves-requests"; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::pool_added && armed.exchange(false)) {
      blocked.store(true);
      std::unique_lock lock(m);
      cv.wait_for(lock, 10s, [&] { return open; });
    }
    if (ev.kind == ext::event_kind::more_cores_requested) {
      {
        std::lock_guard lock(m);
        requests.push_back(ev.pool);
      }
      d.give_core(0, ev.pool);
    }
    for (const auto& p : d.pools())
      if (p.has_ready_work) d.allot(p.id, d.core_count());
  }
  void release() {
    std::lock_guard lock(m);
    open = true;
    cv.notify_all();
  }
  std::size_t requests_heard() {
    std::lock_guard lock(m);
    return requests.size();
  }
  std::atomic<bool> armed{false};
  std::atomic<bool> blocked{false};
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::vector<ext::pool_id> requests;
};

template <class P>
P* install(promptly::runtime& rt, std::unique_ptr<P> owned) {
  P* p = owned.get();
  rt.set_policy(std::move(owned));
  return p;
}

}  // namespace

// A policy acting on an event about a pool removed since (the natural
// reaction to more_cores_requested) used to throw, and the runtime put the
// whole batch back and retried it forever: no later decision was taken, so
// work at another pool never got a core. The stale request is not handed
// over, and no request leaks to a new pool that takes the id.
TEST(PolicyContract, AnEventAboutARemovedPoolBlocksNoOtherDecision) {
  promptly::runtime rt(config(2, "prompt", 1));
  serves_requests* policy = install(rt, std::make_unique<serves_requests>());
  watchdog guard(10s, "an event about a removed pool", [&] { return describe(rt); });
  policy->armed.store(true);
  const promptly::pool gate = rt.create_pool();
  ASSERT_TRUE(wait_until([&] { return policy->blocked.load(); }, 5s));
  const promptly::pool p = rt.create_pool();
  rt.request_cores(p);
  rt.remove_pool(p);
  policy->release();
  EXPECT_EQ(rt.submit([] { return 7; }).get(), 7) << "a decision after the stale event";
  EXPECT_EQ(policy->requests_heard(), 0u) << "a request of a pool removed before the decision";
  const promptly::pool again = rt.create_pool();
  EXPECT_EQ(rt.submit(again, [] { return 8; }).get(), 8);
  EXPECT_EQ(policy->requests_heard(), 0u) << "a new pool on the id heard a request it never made";
  rt.remove_pool(again);
  rt.remove_pool(gate);
}

// Actions that name a pool gone since are ignored; an id that names no
// pool the runtime ever made is an error naming it.
TEST(PolicyContract, ActionsOnAPoolGoneSinceAreIgnored) {
  auto pools = policy_support::pools_with({true, true, true});
  pools.erase(pools.begin() + 1);  // pool 1 was removed
  std::vector<ext::core_view> cores(2);
  for (unsigned c = 0; c < 2; ++c) {
    cores[c].index = c;
    cores[c].target = ext::core_target::pool;
    cores[c].assigned = 0;
    cores[c].pools = {0};
  }
  promptly::detail::decision_impl d(pools, cores, 0us, false);
  d.set_pool_id_end(3);
  EXPECT_NO_THROW(d.give_core(0, 1));
  const std::vector<ext::pool_id> set{1, 2};
  EXPECT_NO_THROW(d.serve(1, set));
  EXPECT_NO_THROW(d.donate_to(1));
  EXPECT_NO_THROW(d.allot(1, 2));
  EXPECT_NE(what_of<std::invalid_argument>([&] { d.give_core(0, 7); }).find("pool 7 is not a live pool"), std::string::npos);
  EXPECT_NE(what_of<std::invalid_argument>([&] { d.allot(ext::no_pool, 1); }).find("is not a live pool"), std::string::npos);
  const auto out = d.resolve();
  EXPECT_EQ(out[0].first(), 0u) << "core 0 keeps its pool";
  EXPECT_EQ(out[1].first(), 2u) << "the removed pool drops out of core 1's set";
}

namespace {
// Places every core at level 0 when installed and throws on every other
// event while `failing`; records when it threw.
struct throws_on_events final : ext::policy {
  std::string_view name() const noexcept override { return "throws-on-events"; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind != ext::event_kind::installed && failing.load()) {
      {
        std::lock_guard lock(m);
        threw_at.push_back(std::chrono::steady_clock::now());
      }
      throw std::runtime_error("refusing to decide");
    }
    for (const auto& p : d.pools())
      if (p.has_ready_work || ev.kind == ext::event_kind::installed) d.allot(p.id, d.core_count());
  }
  std::size_t throws() {
    std::lock_guard lock(m);
    return threw_at.size();
  }
  std::atomic<bool> failing{true};
  std::mutex m;
  std::vector<std::chrono::steady_clock::time_point> threw_at;
};
}  // namespace

// A policy that throws is retried no sooner than 1 ms later (it was retried
// at once, 100k times a second, by the policy thread and by idle workers
// that spun at their loop tops), the workers sleep meanwhile, the failure is
// reported on stderr once and counted in stats().
TEST(PolicyContract, AThrowingPolicyIsRetriedAfterTheDelayWhileWorkersSleep) {
  promptly::runtime rt(config(2, "prompt", 2));
  throws_on_events* policy = install(rt, std::make_unique<throws_on_events>());
  watchdog guard(10s, "a throwing policy", [&] { return describe(rt); });
  testing::internal::CaptureStderr();
  auto f = rt.submit(promptly::level{1}, [] { return 5; });
  ASSERT_TRUE(wait_until([&] { return policy->throws() >= 5; }, 5s));
  ASSERT_TRUE(wait_until([&] { return rt.stats().sleeping_workers == 2; }, 2s)) << describe(rt);
  {
    std::lock_guard lock(policy->m);
    for (std::size_t i = 1; i < policy->threw_at.size(); ++i)
      EXPECT_GE(policy->threw_at[i] - policy->threw_at[i - 1], 1ms) << "retry " << i << " came early";
  }
  EXPECT_GE(rt.stats().policy_failures, 5u);
  policy->failing.store(false);
  EXPECT_EQ(f.get(), 5) << "the retry decides the event once the policy stops throwing";
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "promptly: policy"), 1u) << err;
}

namespace {
// Places every core at the pools with work; throws on became_empty while
// `failing`, and on installed while `refuse_install`.
struct throws_on_empty final : ext::policy {
  std::string_view name() const noexcept override { return "throws-on-empty"; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::installed && refuse_install.load()) throw std::runtime_error("refusing to install");
    if (ev.kind == ext::event_kind::became_empty && failing.load()) {
      failed.fetch_add(1);
      throw std::runtime_error("refusing to decide");
    }
    for (const auto& p : d.pools()) d.allot(p.id, d.core_count());
  }
  std::atomic<bool> failing{true};
  std::atomic<bool> refuse_install{false};
  std::atomic<int> failed{0};
};
}  // namespace

// A decision is applied all or none. set_core_limit returns once its
// decision (installed) is applied, and the events that follow it are decided
// like any other (a policy throwing on them is retried later). It used to
// throw after the cores were already reassigned and restore the old limit
// over the new assignment. A policy that throws on installed changes
// nothing.
TEST(PolicyContract, ACoreLimitIsAppliedWhollyOrNotAtAll) {
  promptly::runtime rt(config(2, "prompt", 1));
  throws_on_empty* policy = install(rt, std::make_unique<throws_on_empty>());
  watchdog guard(10s, "a decision applied whole", [&] { return describe(rt); });
  testing::internal::CaptureStderr();
  EXPECT_EQ(rt.submit([] { return 1; }).get(), 1);
  ASSERT_TRUE(wait_until([&] { return policy->failed.load() >= 1; }, 5s));  // level 0 still believed non-empty
  EXPECT_NO_THROW(rt.set_core_limit(1));
  EXPECT_EQ(rt.core_limit(), 1u);
  auto s = rt.stats();
  EXPECT_EQ(s.worker_states[1].assigned, -1) << "the core past the limit sleeps";
  EXPECT_EQ(s.worker_states[0].assigned, 0);

  policy->refuse_install.store(true);
  EXPECT_THROW(rt.set_core_limit(2), std::runtime_error);
  EXPECT_EQ(rt.core_limit(), 1u) << "nothing changed";
  s = rt.stats();
  EXPECT_EQ(s.worker_states[1].assigned, -1);
  EXPECT_EQ(s.worker_states[0].assigned, 0);
  policy->refuse_install.store(false);
  policy->failing.store(false);
  rt.set_core_limit(0);
  EXPECT_EQ(rt.submit([] { return 2; }).get(), 2);
  (void)testing::internal::GetCapturedStderr();
}

namespace {
// A first policy that serves only the pools made at run time (tenants):
// work at a level never gets a core. Records what the views say of levels.
struct tenants_only final : ext::policy {
  std::string_view name() const noexcept override { return "tenants-only"; }
  void on_event(const ext::event&, ext::decision& d) override {
    for (const auto& p : d.pools()) {
      if (p.level) {
        saw_level.store(true);
        continue;
      }
      saw_tenant.store(true);
      d.allot(p.id, d.core_count());
    }
  }
  std::atomic<bool> saw_level{false}, saw_tenant{false};
};
}  // namespace

// Work at a pool that no core serves while a core idles and the policy has
// nothing left to decide is reported once on stderr and in stats(): it
// used to wait silently, and the destructor with it.
TEST(PolicyContract, WorkThatNoCoreWillServeIsReported) {
  promptly::runtime rt(config(2, "prompt", 1));
  tenants_only* policy = install(rt, std::make_unique<tenants_only>());
  watchdog guard(10s, "unserved work", [&] { return describe(rt); });
  testing::internal::CaptureStderr();
  const promptly::pool tenant = rt.create_pool();
  EXPECT_EQ(rt.submit(tenant, [] { return 1; }).get(), 1);
  auto f = rt.submit([] { return 2; });
  ASSERT_TRUE(wait_until([&] { return rt.stats().levels[0].unserved_since_s > 0; }, 5s)) << describe(rt);
  const auto s = rt.stats();
  EXPECT_TRUE(s.pools.at(0).unserved_since_s == 0) << "the tenant pool is served";
  EXPECT_TRUE(policy->saw_level.load());
  EXPECT_TRUE(policy->saw_tenant.load());
  rt.set_policy("prompt");
  EXPECT_EQ(f.get(), 2);
  ASSERT_TRUE(wait_until([&] { return rt.stats().levels[0].unserved_since_s == 0; }, 5s));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "no core serves pool 0"), 1u) << err;
  rt.remove_pool(tenant);
}

namespace {
// Asks for the largest quantum there is, and ticks with one busy pool.
struct largest_quantum final : ext::policy {
  std::string_view name() const noexcept override { return "largest-quantum"; }
  bool ticks_while_one_pool_is_busy() const noexcept override { return true; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::quantum) ticks.fetch_add(1);
    d.set_quantum(std::chrono::microseconds::max());
    for (unsigned c = 0; c < d.core_count(); ++c) d.give_core(c, 0);
  }
  std::atomic<int> ticks{0};
};
}  // namespace

// set_quantum(microseconds::max()) is clamped to ext::max_quantum. The
// deadline arithmetic overflowed (signed overflow under UBSan) and the
// deadline came out in the past: 130k-200k ticks a second.
TEST(PolicyContract, TheLargestQuantumIsClamped) {
  promptly::detail::decision_impl d({}, {}, 0us, true);
  d.set_quantum(std::chrono::microseconds::max());
  EXPECT_EQ(d.quantum(), ext::max_quantum);

  promptly::runtime rt(config(2, "prompt", 1));
  largest_quantum* policy = install(rt, std::make_unique<largest_quantum>());
  watchdog guard(10s, "the largest quantum", [&] { return describe(rt); });
  // Busy for 50 ms or until 20 ticks came, whichever is first: with a quantum
  // of a day, none comes.
  rt.submit([&] {
      const auto until = std::chrono::steady_clock::now() + 50ms;
      while (policy->ticks.load() < 20 && std::chrono::steady_clock::now() < until) promptly::yield();
    }).get();
  EXPECT_EQ(policy->ticks.load(), 0);
  EXPECT_EQ(rt.stats().quanta, 0u);
}

namespace {
// Records the views of the last quantum tick.
struct records_ticks final : ext::policy {
  std::string_view name() const noexcept override { return "records-ticks"; }
  bool ticks_while_one_pool_is_busy() const noexcept override { return true; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    d.set_quantum(std::chrono::milliseconds(1));
    for (unsigned c = 0; c < d.core_count(); ++c) d.give_core(c, 0);
    std::lock_guard lock(m);
    // pools_with_work() shows what pools() shows, CPU time included, and
    // CPU time only at ticks (the runtime keeps its view between decisions).
    for (const auto& p : d.pools_with_work()) {
      const ext::pool_view* q = d.find(p.id);
      if (q == nullptr || q->cpu_s != p.cpu_s || q->level != p.level) ++views_differ;
      if (ev.kind == ext::event_kind::quantum && p.id == 0) ++ticks_with_work;
    }
    for (const auto& p : d.pools()) {
      if (ev.kind != ext::event_kind::quantum && p.cpu_s != 0) ++cpu_between_ticks;
      if (p.id == 0 && !p.level) ++level_missing;
    }
    if (ev.kind != ext::event_kind::quantum) return;
    for (const auto& p : d.pools())
      if (p.id == 0) {
        work_s += p.work_s;
        cpu_s += p.cpu_s;
      }
    for (const auto& c : d.cores()) core_cpu_s += c.cpu_s;
    ++ticks;
  }
  std::mutex m;
  double work_s = 0, cpu_s = 0, core_cpu_s = 0;
  int ticks = 0;
  int views_differ = 0, ticks_with_work = 0, cpu_between_ticks = 0, level_missing = 0;
};
}  // namespace

// Policies see CPU time beside wall time: a worker the OS preempted counts
// in work_s but not in cpu_s. Here a worker runs a busy task, so its CPU
// time is positive and never above its wall time (plus the clocks'
// granularity). Every quantum tick is sampled in the decision latency.
TEST(PolicyContract, PoliciesSeeCpuTimeAndEveryTickIsSampled) {
  promptly::runtime rt(config(1, "prompt", 1));
  records_ticks* policy = install(rt, std::make_unique<records_ticks>());
  watchdog guard(10s, "cpu time", [&] { return describe(rt); });
  rt.submit([&] {
      for (;;) {
        {
          std::lock_guard lock(policy->m);
          if (policy->ticks >= 20) return;
        }
        promptly::yield();
      }
    }).get();
  EXPECT_GE(rt.stats().decision_latency_samples, 20u) << "every tick is a sample";
  std::lock_guard lock(policy->m);  // not across stats(): the policy takes it under the runtime's lock
  EXPECT_GT(policy->cpu_s, 0.0);
  EXPECT_LE(policy->cpu_s, policy->work_s + 0.01);
  EXPECT_GT(policy->core_cpu_s, 0.0);
  EXPECT_EQ(policy->views_differ, 0) << "pools_with_work() and pools() disagree (" << policy->ticks_with_work
                                     << " ticks saw pool 0 with work)";
  EXPECT_EQ(policy->cpu_between_ticks, 0) << "cpu_s is 0 at decisions other than ticks";
  EXPECT_EQ(policy->level_missing, 0) << "pool 0 is a level";
}
