// Preemption of long strands (README.md, "Preemption"): ready work of a pool that waits
// because every core the policy gives the pool is inside a strand of another pool (code that
// reaches no strand boundary, so no move can interrupt it) runs on a standby thread, and the
// kernel time-shares the core between that thread and the strand. I-Cilk's APS and fairly
// prompt scheduling move cores only at strand boundaries; this bounds what a strand without
// boundaries costs the urgent work to a threshold plus a wake-up.
//
// The standby threads are workers past the cores (indices worker_count()..): the policy never
// sees them in its core views, their assignment word is no_pool while they stand by (they
// sleep in sleep_unassigned, and no wake-up for work is ever aimed at them), and one runs like
// any worker once given a pool. Three parties, data flowing one way:
//  * the make-ready paths (inject, inject_batch) note a pool whose new work nobody is counted
//    at (their wake-up found no sleeper to wake, no worker is active there, no thief awake for
//    it) in waiting_unserved_ and wake the policy thread the first time
//    (note_work_without_taker);
//  * the policy thread watches each such pool (watch_preemption_locked): if at the threshold
//    no task of it has run, its queue still holds work, no worker is active there and some
//    core's assignment holds it and every such core is working at another pool that is not
//    more urgent (held_by_strands_locked), the policy hears waiting_behind_strands; it may answer
//    decision::preempt (prompt, aps and fair do);
//  * applying that (send_standby_locked) writes the pool into a free standby's word and wakes
//    it; the policy thread takes it back (no_pool) once the pool has no ready work left or a
//    core of its own is active there, and the standby then leaves as a core given no pool
//    does: its running task, if any, parks at its next strand boundary as a ready
//    continuation, and its deque is handed over to the pool's workers (pool_moves.cpp).
//
// Invariants (asserted in the Debug build)
//  * Only the holder of policy_mutex_ writes a standby's assignment word, as for cores; a
//    standby's word is no_pool or a single pool id (never a set: it takes nothing below).
//  * standby_pool_[i] mirrors standby i's word (policy_mutex_): at most one standby per pool.
//  * The policy sees worker_count() cores; stats().workers counts them, not the standbys.
//  * No more threads run promptly work than cores plus deployed standbys, and a standby stays
//    deployed only while its pool has ready work and none of the pool's cores is active there
//    (checked every threshold), so the excess lasts as long as the urgent work does.
#include <algorithm>
#include <cassert>
#include <cstdio>

#include "os_time_slice.hpp"
#include "scheduler.hpp"

namespace promptly::detail {

// Called by a make-ready path whose wake-up woke nobody. Relaxed counter reads: a stale zero arms a
// watch that finds the pool served and drops it; a stale non-zero leaves the work to the
// worker counted there, which the next arrival's check sees.
void scheduler::note_work_without_taker(std::uint32_t pool) noexcept {
  if (standby_count() == 0 || !strand_events_.load(std::memory_order_relaxed)) return;
  pool_record& p = pool_at(pool);
  if (p.num_actives.load(std::memory_order_relaxed) != 0 || p.num_thieves.load(std::memory_order_relaxed) != 0) return;
  if (every_core_serves_every_pool_.load(std::memory_order_relaxed)) return;  // oblivious: nothing to watch
  if (waiting_unserved_.set(pool)) poke_driver();  // the first since the thread last took the bits
}

std::uint64_t scheduler::watch_preemption_locked(std::uint64_t now) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (standby_count() == 0) return 0;
  const std::uint64_t threshold = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.preemption.threshold).count());
  waiting_unserved_.take([&](std::uint32_t id) {
    if (std::any_of(watched_.begin(), watched_.end(), [&](const watched_pool& w) { return w.id == id; })) return;
    const pool_record& p = pool_at(id);
    std::lock_guard identity(pools_.mutex());  // creation_seq is written under it
    watched_.push_back({id, p.creation_seq, now, p.tasks.load(std::memory_order_relaxed)});
  });
  std::uint64_t next = 0;
  auto check_at = [&](std::uint64_t at) {
    if (next == 0 || at < next) next = at;
  };
  std::vector<ext::event> waiting;
  std::erase_if(watched_, [&](const watched_pool& w) {
    if (w.id >= pools_.id_end()) return true;
    pool_record& p = pool_at(w.id);
    const pool_phase ph = p.phase.load(std::memory_order_relaxed);
    if (ph != pool_phase::live && ph != pool_phase::closing) return true;
    {
      std::lock_guard identity(pools_.mutex());
      if (p.creation_seq != w.creation_seq) return true;
    }
    // Served meanwhile: a task of it ran, a worker is at it, or nothing is queued.
    if (p.tasks.load(std::memory_order_relaxed) != w.tasks || p.num_actives.load(std::memory_order_relaxed) != 0 ||
        p.injection.empty())
      return true;
    if (now < w.since_ns + threshold) {
      check_at(w.since_ns + threshold);
      return false;
    }
    // Only strands are preempted: a pool the policy gives no core waits by the policy's choice
    // (prompt starving a level below work; the unserved watch reports it if a core idles), and
    // a core of the pool that is looking for work or waking is on its way.
    if (held_by_strands_locked(w.id) &&
        std::find(standby_pool_.begin(), standby_pool_.end(), w.id) == standby_pool_.end()) {
      waiting.push_back({ext::event_kind::waiting_behind_strands, w.id, {}});
      waited_since_.push_back({w.id, w.since_ns});
    }
    return true;
  });
  if (!waiting.empty()) decide_isolating_locked(std::move(waiting));  // preempt() answers reach send_standby_locked
  waited_since_.clear();
  // The standbys out: back when their pool has no ready work or a core of its own is active
  // there (num_actives counts the standby itself while it works).
  for (std::size_t i = 0; i < standby_pool_.size(); ++i) {
    const std::uint32_t id = standby_pool_[i];
    if (id == no_pool) continue;
    const pool_record& p = pool_at(id);
    if (!p.has_ready_work() || p.num_actives.load(std::memory_order_relaxed) >= 2)
      recall_standby_locked(i);
    else
      check_at(now + threshold);
  }
  return next;
}

// Some usable core's assignment holds `pool`, and every such core is working (inside a task)
// at another pool that is not more urgent. Relaxed reads of the cores' phase and pool: a
// stale read preempts once more or once less, and the next arrival looks again.
bool scheduler::held_by_strands_locked(std::uint32_t pool) const {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::lock_guard identity(pools_.mutex());  // rank is written under it
  const unsigned rank = pool_at(pool).rank;
  bool held = false;
  const unsigned usable = usable_cores();
  for (unsigned c = 0; c < usable; ++c) {
    const pool_set& a = applied_[c];
    if (a.every()) return false;  // it takes the work wherever it is: no pool is held from it
    const auto ids = a.ranked_ids();
    if (std::find(ids.begin(), ids.end(), pool) == ids.end()) continue;
    const worker& w = *workers_[c];
    if (w.phase.load(std::memory_order_relaxed) != worker_phase::working) return false;
    const std::uint32_t serving = w.serving.load(std::memory_order_relaxed);
    if (serving == pool || pool_at(serving).rank < rank) return false;  // at the pool, or in more urgent work
    held = true;
  }
  return held;
}

void scheduler::send_standby_locked(std::uint32_t pool) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (standby_count() == 0) return;
  if (std::find(standby_pool_.begin(), standby_pool_.end(), pool) != standby_pool_.end()) return;  // one is there
  const auto free = std::find(standby_pool_.begin(), standby_pool_.end(), no_pool);
  if (free == standby_pool_.end()) return;  // every standby is out: the event comes again while the work waits
  const std::size_t i = static_cast<std::size_t>(free - standby_pool_.begin());
  worker& w = *workers_[worker_count() + i];
  std::uint64_t since = now_ns();
  for (const waited& ws : waited_since_)
    if (ws.pool == pool) since = ws.since_ns;
  standby_pool_[i] = pool;
  w.preempt_since_ns.store(since, std::memory_order_relaxed);  // relaxed: a statistic, read by the standby
  preemptions_.fetch_add(1, std::memory_order_relaxed);        // relaxed: a statistic
  if (tracing_) [[unlikely]]
    policy_trace_.record(trace_kind::preempt, now_ns(), pool, static_cast<std::uint32_t>(w.index));
  notifier::fence_before_notify();
  // Seq-cst: as apply_locked (the standby re-reads its word after preparing to wait).
  w.assigned.store(pool, std::memory_order_seq_cst);
  notifier::notify(w.slot);
}

void scheduler::recall_standby_locked(std::size_t i) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  worker& w = *workers_[worker_count() + i];
  standby_pool_[i] = no_pool;
  notifier::fence_before_notify();
  w.assigned.store(no_pool, std::memory_order_seq_cst);  // its strand boundary and its wait both read it
  notifier::notify(w.slot);
}

// A standby starts its first task since it was sent: the latency from the work first found
// waiting to now (mechanism.preempt). Relaxed: statistics of the standby's own thread.
void scheduler::note_standby_started(worker& w) noexcept {
  if (const std::uint64_t since = w.preempt_since_ns.exchange(0, std::memory_order_relaxed); since != 0)
    w.samples.record(mechanism_op::preempt, elapsed_since(since));
}

}  // namespace promptly::detail
