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
//    it) on the event board and wake the policy thread the first time
//    (event_board::note_work_without_taker);
//  * the policy thread watches each such pool (take_waiting_locked): if at the threshold
//    no task of it has run, its queue still holds work, no worker is active there and some
//    core's assignment holds it and every such core is working at another pool that is not
//    more urgent (held_by_strands_locked), the policy hears waiting_behind_strands; it may answer
//    decision::preempt (prompt, aps and fair do);
//  * applying that (send_locked) writes the pool into a free standby's word and wakes
//    it; the policy thread takes it back (no_pool) once the pool has no ready work left or a
//    core of its own is active there, and the standby then leaves as a core given no pool
//    does: its running task, if any, parks at its next strand boundary as a ready
//    continuation, and its deque is handed over to the pool's workers (pool_moves.cpp).
//
// Invariants (asserted in the Debug build)
//  * Every member function but note_started runs under the policy driver's lock
//    (policy_mutex_), which guards the lists below; only its holder writes a standby's
//    assignment word, as for cores; a
//    standby's word is no_pool or a single pool id (never a set: it takes nothing below).
//  * standby_pool_[i] mirrors standby i's word (policy_mutex_): at most one standby per pool.
//  * The policy sees worker_count() cores; stats().workers counts them, not the standbys.
//  * No more threads run promptly work than cores plus deployed standbys, and a standby stays
//    deployed only while its pool has ready work and none of the pool's cores is active there
//    (checked every threshold), so the excess lasts as long as the urgent work does.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "assignment.hpp"
#include "checked_mutex.hpp"
#include "event_board.hpp"
#include "event_trace.hpp"
#include "pool_table.hpp"
#include "promptly/ext/policy.hpp"
#include "worker.hpp"

namespace promptly::detail {

// The standby threads' bookkeeping: the pools watched for the threshold, the pool each
// standby is at, and the count of preemptions. The policy driver owns it.
class standby_dispatch {
 public:
  // `policy_mutex` is the driver's lock (asserted held); `workers` the scheduler's, the
  // standbys at indices cores..cores+standbys-1.
  standby_dispatch(const checked_mutex& policy_mutex, pool_table& pools, const std::vector<std::unique_ptr<worker>>& workers,
                   unsigned cores, unsigned standbys, std::chrono::nanoseconds threshold, event_board& board);
  standby_dispatch(const standby_dispatch&) = delete;
  standby_dispatch& operator=(const standby_dispatch&) = delete;

  // Takes the pools the make-ready paths noted and watches them; returns the
  // waiting_behind_strands events due now (`usable`: the usable cores'
  // assignments as applied). `next` becomes the earliest next check (ns) if
  // earlier (0: none yet). Their decision's preempt() answers reach send_locked.
  std::vector<ext::event> take_waiting_locked(std::uint64_t now, std::span<const pool_set> usable, std::uint64_t& next);
  // After the decision on take_waiting_locked's events: recalls the standbys
  // no longer needed, and updates `next` as take_waiting_locked.
  void recall_served_locked(std::uint64_t now, std::uint64_t& next);
  // Sends a free standby to `pool` (decision::preempt); records on `trace` if not null.
  void send_locked(std::uint32_t pool, trace_ring* trace);
  // A standby starts its first task since it was sent (its own thread).
  static void note_started(worker& w) noexcept;
  std::uint64_t preemptions() const noexcept { return preemptions_.load(std::memory_order_relaxed); }  // relaxed: a statistic

 private:
  bool held_by_strands_locked(std::uint32_t pool, std::span<const pool_set> usable) const;
  void recall_locked(std::size_t standby);

  const checked_mutex& policy_mutex_;
  pool_table& pools_;
  const std::vector<std::unique_ptr<worker>>& workers_;
  const unsigned cores_;
  const std::uint64_t threshold_ns_;
  event_board& board_;
  // The pools watched for the threshold, and each standby's pool (no_pool: standing by).
  struct watched_pool {
    std::uint32_t id;
    std::uint64_t creation_seq;
    std::uint64_t since_ns;
    std::uint64_t tasks;  // pool_record::tasks when the watch began
  };
  std::vector<watched_pool> watched_;
  struct waited {
    std::uint32_t pool;
    std::uint64_t since_ns;
  };
  std::vector<waited> waited_since_;  // the pools of the waiting_behind_strands events being decided
  std::vector<std::uint32_t> standby_pool_;
  std::atomic<std::uint64_t> preemptions_{0};
};

}  // namespace promptly::detail
