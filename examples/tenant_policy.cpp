// A user-written policy on pools made at run time: each tenant gets a pool,
// and the policy gives every core, every quantum, to the tenants with work
// in turn (round robin), ignoring rank. Build: part of `./run build`
// (build/examples/promptly_tenant_policy). Guide: docs/policies.md.
//
// What it shows: runtime::create_pool / remove_pool while the runtime runs,
// rt.submit(pool, f), and the ext::policy interface (events, the pools and
// cores a decision sees, give_core / take_core, set_quantum).
#include <promptly/ext/policy.hpp>
#include <promptly/promptly.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

class round_robin final : public promptly::ext::policy {
 public:
  std::string_view name() const noexcept override { return "round-robin"; }

  void on_event(const promptly::ext::event& ev, promptly::ext::decision& d) override {
    using promptly::ext::event_kind;
    if (ev.kind == event_kind::installed) d.set_quantum(std::chrono::milliseconds(1));
    if (ev.kind == event_kind::quantum) ++turn_;  // a quantum passed: the next tenant's turn
    std::vector<promptly::ext::pool_id> busy;
    for (const promptly::ext::pool_view& p : d.pools())
      if (p.has_ready_work) busy.push_back(p.id);
    for (unsigned c = 0; c < d.core_count(); ++c) {
      if (busy.empty())
        d.take_core(c);  // nothing anywhere: the core sleeps until a pool gets work
      else
        d.give_core(c, busy[(turn_ + c) % busy.size()]);
    }
  }

 private:
  std::size_t turn_ = 0;
};

long fib(int n) {
  if (n < 2) return n;
  auto [a, b] = promptly::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return a + b;
}

}  // namespace

int main() {
  promptly::runtime rt;
  rt.set_policy(std::make_unique<round_robin>());

  // Three tenants arrive, each with its own pool and job.
  std::vector<promptly::pool> tenants;
  std::vector<promptly::future<long>> jobs;
  for (int t = 0; t < 3; ++t) {
    tenants.push_back(rt.create_pool({.rank = 1}));
    jobs.push_back(rt.submit(tenants.back(), [t] { return fib(27 + t); }));
  }
  for (int t = 0; t < 3; ++t) std::printf("tenant %d (pool %u): fib(%d) = %ld\n", t, tenants[t].id, 27 + t, jobs[t].get());

  const promptly::runtime_stats s = rt.stats();
  for (const promptly::pool_stats& p : s.pools)
    std::printf("pool %u: %.3f worker-s working, %llu tasks\n", p.id, p.work_s,
                static_cast<unsigned long long>(p.tasks_run));
  std::printf("policy '%s': %llu decisions, %llu quanta; event-to-decision p50 %.1f us, p99 %.1f us\n",
              s.policy.c_str(), static_cast<unsigned long long>(s.decisions), static_cast<unsigned long long>(s.quanta),
              s.decision_latency_p50_us, s.decision_latency_p99_us);

  for (promptly::pool p : tenants) rt.remove_pool(p);  // each waits for its tenant's work
  std::printf("pools alive after removal: %zu (the levels)\n", rt.pool_count());
}
