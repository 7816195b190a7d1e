// runtime::stats(): a snapshot of the pools, the cores, the policy's
// accounts and the mechanism's timings, read by the policy driver under its
// lock (the policy's desire and fairness accounts are the driver's), with
// the pool table read under its own lock. Read-only: it changes no
// scheduler state.
#include <algorithm>
#include <cassert>
#include <optional>
#include <chrono>
#include <cstdint>
#include <vector>

#include "policy_driver.hpp"
#include "worker_accounts.hpp"

namespace promptly::detail {

namespace {
double percentile_us(std::vector<std::uint64_t> v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) * 1e-3;
}
}  // namespace

// One pool's entry: O(workers + log of the pools the last quantum tick
// read), no walk over every pool.
// The caller holds policy_mutex_ (the policy's accounts) and the pool
// table's mutex (rank, weight).
pool_stats policy_driver::pool_stats_locked(std::uint32_t id, unsigned allotted, std::uint64_t now) const {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  const pool_record& p = pool_at(id);
  pool_stats ps;
  ps.id = id;
  ps.rank = p.rank;
  ps.weight = p.weight;
  ps.desire = policy_->desire(id);
  const ext::fair_account fa = policy_->fairness(id);
  ps.share = fa.share;
  ps.sampled_share = fa.sampled_share;
  ps.received_share = fa.received_share;
  ps.credit_s = fa.credit_s;
  ps.allotted = allotted;
  ps.has_ready_work = p.has_ready_work();
  if (const ext::pool_view* q = last_quantum_view(id)) {
    ps.utilization = q->utilization();
    ps.last_work_s = q->work_s;
    ps.last_look_s = q->look_s;
  }
  ps.work_s = seconds_of(p.work_ns.load(std::memory_order_relaxed));
  ps.look_s = seconds_of(p.look_ns.load(std::memory_order_relaxed));
  for (auto& w : workers_)
    if (const open_interval open = open_interval_of(*w, now); open.pool == id) {
      (open.working ? ps.work_s : ps.look_s) += seconds_of(open.ns);
      if (!notifier::is_asleep(w->slot)) ++ps.serving;  // a snapshot
    }
  ps.tasks_run = p.tasks.load(std::memory_order_relaxed);
  ps.switches_in = p.switches_in.load(std::memory_order_relaxed);
  // unserved_ is sorted by id, one entry per id (note_unserved_locked).
  const auto u = std::lower_bound(unserved_.begin(), unserved_.end(), id,
                                  [](const unserved_pool& e, std::uint32_t key) { return e.id < key; });
  if (u != unserved_.end() && u->id == id && u->reported && u->creation_seq == p.creation_seq)
    ps.unserved_since_s = std::max(1e-9, seconds_of(u->since_ns - static_cast<std::uint64_t>(
                                                                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                      started_.time_since_epoch())
                                                                      .count())));
  return ps;
}

// One pool without the rest of runtime::stats(): no percentiles, no walk
// over every pool, so a caller may ask at every job's end. A job server
// with hundreds of jobs queued that read the whole snapshot per job end
// held this lock long enough to starve the decisions it waited for.
std::optional<pool_stats> policy_driver::stats_of(std::uint32_t id) const {
  std::lock_guard lock(policy_mutex_);
  std::lock_guard identity(pools_.mutex());  // rank, weight: written under it
  if (id >= pools_.id_end()) return std::nullopt;
  const pool_phase ph = pool_at(id).phase.load(std::memory_order_relaxed);
  if (ph != pool_phase::live && ph != pool_phase::closing) return std::nullopt;
  unsigned allotted = 0;
  for (const pool_set& a : applied_)
    if (a.first() == id) ++allotted;
  return pool_stats_locked(id, allotted, now_ns());
}

runtime_stats policy_driver::stats(std::size_t fibers, std::uint64_t blocked_waits) const {
  std::lock_guard lock(policy_mutex_);
  runtime_stats s;
  s.policy = std::string(policy_->name());
  s.workers = worker_count();
  s.core_limit = core_limit();
  s.fibers = fibers;
  s.decisions = decisions_;
  s.quanta = quanta_;
  s.blocked_waits = blocked_waits;
  s.policy_failures = policy_failures_;
  s.decision_latency_samples = latency_ns_.size();
  s.decision_latency_p50_us = percentile_us(latency_ns_, 0.5);
  s.decision_latency_p99_us = percentile_us(latency_ns_, 0.99);
  auto mechanism = [&](mechanism_op op) {
    std::vector<std::uint32_t> ns;
    for (auto& w : workers_) w->samples.collect(op, ns);
    return summarize_ns(ns);
  };
  s.mechanism.realloc = mechanism(mechanism_op::realloc);
  s.mechanism.sleep = mechanism(mechanism_op::sleep);
  s.mechanism.wake = mechanism(mechanism_op::wake);
  s.mechanism.resume = mechanism(mechanism_op::resume);
  s.mechanism.mug = mechanism(mechanism_op::mug);
  s.mechanism.steal = mechanism(mechanism_op::steal);
  s.mechanism.preempt = mechanism(mechanism_op::preempt);
  s.preemptions = standbys_.preemptions();
  const std::uint32_t end = pools_.id_end();
  const std::vector<unsigned> cores = cores_by_pool();
  for (std::size_t c = 0; c < worker_count(); ++c) {  // the cores (the standbys are counted in `preemptions`)
    const auto& w = workers_[c];
    worker_state ws;
    ws.serving = w->serving.load(std::memory_order_relaxed);
    const pool_set& a = applied_[c];
    ws.assigned = a.asleep() ? -1 : a.every() ? static_cast<int>(ws.serving) : static_cast<int>(a.first());
    for (const std::uint32_t id : a.ranked_ids()) ws.pools.push_back(static_cast<int>(id));
    ws.every_pool = a.every();
    const bool asleep = notifier::is_asleep(w->slot);
    ws.state = asleep ? "sleeping" : w->phase.load(std::memory_order_relaxed) == worker_phase::working ? "working" : "looking";
    ws.cpu = w->cpu;
    ws.os_time_slice_us = w->os_time_slice_us.load(std::memory_order_relaxed);  // relaxed: a statistic
    s.sleeping_workers += asleep ? 1 : 0;
    s.worker_states.push_back(std::move(ws));
  }
  const std::uint64_t now = now_ns();
  std::lock_guard identity(pools_.mutex());  // rank, weight: written under it
  for (std::uint32_t id = 0; id < end; ++id) {
    const pool_phase ph = pool_at(id).phase.load(std::memory_order_relaxed);
    if (ph != pool_phase::live && ph != pool_phase::closing) continue;
    (id < level_count() ? s.levels : s.pools).push_back(pool_stats_locked(id, cores[id], now));
  }
  return s;
}

}  // namespace promptly::detail
