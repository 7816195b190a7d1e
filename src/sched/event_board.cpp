// The event board's posting side (event_board.hpp states the invariants).
#include <atomic>
#include <cstdint>

#include "event_board.hpp"

namespace promptly::detail {

namespace {
// A worker working this long without a pause may be in one long strand:
// an event then also wakes a sleeping worker to decide. Beside such a
// strand an event waits at most about this plus a wake-up (p50 14-20 us
// here), twice aps's 500 us quantum; a shorter mark would wake sleepers
// beside ordinary busy workers more often. Not tuned: in the apps' A/B
// (4 rounds, then 10 more of prompt) every median stayed inside the old
// rule's range (bench/results/apps/long-strand-wake/).
constexpr std::uint64_t long_strand_ns = 1'000'000;
}  // namespace

// Seq-cst mode loads: a submitter that pushed after a decision read the
// pool must see that decision's store of every_core_serves_every_pool
// (both seq-cst).
void event_board::note_nonempty(std::uint32_t pool) noexcept {
  if (modes.every_core_serves_every_pool.load(std::memory_order_seq_cst)) return;
  pool_record& p = pools_.at(pool);
  if (!p.believed_nonempty.exchange(true, std::memory_order_seq_cst)) {
    post_event_for_workers(became_nonempty_, pool);
    return;
  }
  // Already non-empty: no event, unless the policy asked to hear of a queue
  // forming (ext::policy::wants_backlog_events). Without it a pool whose
  // cores are busy queues what arrives until the next tick (README.md,
  // "Backlog events").
  if (modes.backlog_events.load(std::memory_order_relaxed) && p.injection.size() >= 2 &&
      !p.backlog_posted.exchange(true, std::memory_order_relaxed))
    post_event_for_workers(backlogged_, pool);
}

// The policy thread needs a core to run, and on a machine whose cores all
// run workers that means preempting one (measured with every decision on
// that thread and a core taken by other work: an urgent job's p99 of 4.0 ms
// under prompt, bench/results/priority/latency-recheck/driver-only-one-core/).
// So the workers decide instead: every awake worker gets decide_request (a
// working one parks its task at its next strand boundary and its loop top
// decides; an idle one leaves its wait, `moved`), the first to get there
// decides and the others find nothing pending. Asking all, not one, makes
// the delay the nearest strand boundary of any worker. If every worker
// waits, one is woken to decide (one, not all: no herd). So is one when
// every working worker has been working for long_strand_ns or more: it may
// be in one long strand (a loop with no boundary), and the event would wait
// for that strand to end while a core sleeps (README.md, "Decisions in one
// place"). A worker busy that long with many boundaries costs the sleeper a
// needless wake, rarely: a worker that long busy beside a sleeping one is
// unusual in fork-join code, where the idle one steals. Only a worker the
// policy put to sleep (no pool) cannot decide (it waits for an assignment,
// sleep_unassigned), so then the policy thread is woken as well: it is the
// only one that may wake such a core, and the core it runs on is idle.
//
// Why no event is left undecided: the caller set the event bit (seq-cst)
// and the fence below orders it before the slot reads. A worker read here
// as awake stores `preparing` (seq-cst) before it re-checks `moved` (which
// reads the bit) in wait_for_task, and a working one reaches its loop top,
// which reads the bit, before it can wait at all. A worker read as waiting
// is woken (notifier.hpp, no lost wake-up). A loop top that finds the
// policy lock held wakes the policy thread (decide_at_loop_top), which
// re-reads the bits before it sleeps (driver_main).
bool event_board::ask_workers_to_decide() noexcept {
  notifier::fence_before_notify();
  bool someone_decides = false;
  bool someone_decides_soon = false;  // a worker looking for work, or working for less than long_strand_ns
  worker* waiting = nullptr;
  const std::uint64_t now = now_ns();
  for (unsigned c = 0; c < cores_; ++c) {  // the cores (a standby decides nothing)
    worker& v = *workers_[c];
    if (v.assigned.load(std::memory_order_relaxed) == no_pool) return false;  // asleep by the policy's choice: only a decision wakes it (relaxed: ask_to_decide re-reads it)
    if (notifier::is_waiting(v.slot)) {
      waiting = &v;
      continue;
    }
    if (!ask_to_decide(v)) return false;  // the policy put it to sleep meanwhile
    someone_decides = true;
    // Relaxed: statistics the worker writes; a stale read wakes a sleeper
    // needlessly or leaves the event to the working worker's next boundary.
    const std::uint64_t since = v.phase_since_ns.load(std::memory_order_relaxed);
    if (v.phase.load(std::memory_order_relaxed) != worker_phase::working || now < since + long_strand_ns)
      someone_decides_soon = true;
  }
  // The waiting worker gets the request too: its wait ends on it (`moved`)
  // whatever the event is, and its loop top then decides.
  if (!someone_decides_soon && waiting != nullptr) {
    if (!ask_to_decide(*waiting)) return false;
    someone_decides = notifier::notify(waiting->slot) || someone_decides;
  }
  return someone_decides;
}

// Creating and removing a pool (pools.cpp) post this way too: the caller
// (a job server's submitting or reaping thread) then makes no futex wake of
// the policy thread on a loaded machine, and that thread does not preempt
// a worker to decide (with the drain wake-up below, remove p50 went from
// 11.7 to 0.7 us under 75% load: bench/results/jobs/overheads/ab-pool-events/).
void event_board::post_event_for_workers(event_bitmap& events, std::uint32_t pool) noexcept {
  post_event(events, pool, decider::poster);  // the bit first: whoever is asked below must see it
  if (!ask_workers_to_decide()) poke_driver();
}

bool event_board::events_posted() const noexcept {
  return became_nonempty_.any() || maybe_empty_.any() || pools_added_.any() || pools_removed_.any() ||
         cores_requested_.any() || backlogged_.any();
}

bool event_board::ask_to_decide(worker& v) noexcept {
  unsigned word = v.assigned.load(std::memory_order_relaxed);  // relaxed: the CAS re-reads it
  // Release: the worker's acquire at its loop top then sees the event bits set before.
  while (!(word & decide_request) && word != no_pool &&
         !v.assigned.compare_exchange_weak(word, word | decide_request, std::memory_order_release,
                                           std::memory_order_relaxed)) {
  }
  return word != no_pool;
}

bool event_board::note_maybe_empty(std::uint32_t pool, decider who) noexcept {
  if (modes.every_core_serves_every_pool.load(std::memory_order_seq_cst)) return false;
  pool_record& p = pools_.at(pool);
  if (!p.believed_nonempty.load(std::memory_order_seq_cst) || p.has_ready_work()) return false;
  return post_event(maybe_empty_, pool, who);
}

// An event's poster either wakes the policy thread or sees to it that a
// worker decides at its loop top (decider::poster: the poster itself, an
// idle worker, or the workers it asks, ask_workers_to_decide): then
// decide_at_loop_top either takes the event bits under the policy lock, or,
// finding the lock held, wakes the thread, which re-reads the bits before
// it sleeps. No event waits for a decision nobody will take.
bool event_board::post_event(event_bitmap& events, std::uint32_t pool, decider who) noexcept {
  // The first event since the thread last decided starts the latency clock
  // (relaxed: a measurement; the event itself is ordered below).
  std::uint64_t none = 0;
  if (oldest_event_ns_.load(std::memory_order_relaxed) == 0)
    oldest_event_ns_.compare_exchange_strong(none, now_ns(), std::memory_order_relaxed);
  // Seq-cst (event_bitmap), then the notifier's fence: the thread's
  // prepare_wait/re-check either sees the bit or is woken (notifier.hpp).
  const bool anew = events.set(pool);
  if (who == decider::poster) return anew;
  notifier::fence_before_notify();
  notifier::notify(driver_slot_);
  return anew;
}

void event_board::poke_driver() noexcept {
  driver_poked_.store(true, std::memory_order_seq_cst);  // seq-cst: as post_event
  notifier::fence_before_notify();
  notifier::notify(driver_slot_);
}

// Called by a make-ready path whose wake-up woke nobody (preemption.hpp).
// Relaxed counter reads: a stale zero arms a watch that finds the pool
// served and drops it; a stale non-zero leaves the work to the worker
// counted there, which the next arrival's check sees.
void event_board::note_work_without_taker(std::uint32_t pool) noexcept {
  if (standbys_ == 0 || !modes.strand_events.load(std::memory_order_relaxed)) return;
  pool_record& p = pools_.at(pool);
  if (p.num_actives.load(std::memory_order_relaxed) != 0 || p.num_thieves.load(std::memory_order_relaxed) != 0) return;
  if (modes.every_core_serves_every_pool.load(std::memory_order_relaxed)) return;  // oblivious: nothing to watch
  if (waiting_unserved_.set(pool)) poke_driver();  // the first since the thread last took the bits
}

}  // namespace promptly::detail
