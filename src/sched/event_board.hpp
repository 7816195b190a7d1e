// The event board: how the mechanism (submitters, wakers, workers, pool
// creation and removal) tells the policy driver (policy_driver.hpp) that
// something happened. Posting records an event (a bit per pool in an
// event_bitmap) and sees to it that someone decides: a futex wake of the
// policy thread (post_event) or a request to the workers to decide at
// their loop tops (post_event_for_workers). Calls go one way: the board
// never takes the policy lock nor calls a policy or the driver; the driver
// takes the bits (take) and sets the posting modes. It is the only part of
// the scheduler's policy side that the make-ready paths touch.
//
// Invariants
//  * Posting never blocks on the policy, allocates or throws, so it is
//    safe on the noexcept wake path of a parked fiber.
//  * A posted event is decided: by the policy thread, which re-reads every bitmap
//    before it sleeps, or by a worker asked to (ask_workers_to_decide). A
//    decision that overwrites an asked worker's word clears its request;
//    the worker that decided re-reads the pool-table bitmaps afterwards and
//    wakes the policy thread if one is set (policy_driver::decide_at_loop_top).
//    A poster (decider::poster) answers for the bits it set anew: it decides
//    them at its loop top, or, finding the policy lock held, wakes the
//    policy thread (which decides after the holder). A bit already pending
//    has its decider, so posting it again makes the poster answer for nothing.
//  * pool_record::believed_nonempty is what the policy last saw: every
//    decision sets it from the view it decided on. A submitter pushes first
//    and then exchanges it to true; if it was false, the submitter posts
//    became_nonempty. A decision that clears it re-reads the pool after the
//    clear (both seq-cst), so either the submitter sees false and posts the
//    event, or the decision sees the work and decides again: work never
//    waits in a pool the policy believes empty. A worker that becomes
//    active re-reads the belief after its increment (scheduling_loop.cpp).
//  * The modes are written only by the holder of the policy lock (the
//    driver installing a policy or applying a decision) and read without
//    it; each read states why its order suffices.
//  * Backlog events (only for a policy that wants_backlog_events) are a
//    hint, not a liveness guarantee: at most one per pool is posted between
//    two decisions (pool_record::backlog_posted, cleared by every view of
//    the pool), and a stale read of either flag posts one more or one fewer.
//    Work is never left behind by a missing one: it is queued at a pool the
//    policy believes non-empty, whose cores take it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "event_bitmap.hpp"
#include "notifier.hpp"
#include "pool_table.hpp"
#include "promptly/ext/policy.hpp"
#include "worker.hpp"

namespace promptly::detail {

class event_board {
 public:
  // Who takes the decision on an event: the policy thread (woken), or a
  // worker at its loop top (the poster itself, or the workers it asks:
  // a worker preempts nobody).
  enum class decider { policy_thread, poster };

  // What posting filters on, written by the policy driver (see the invariants).
  struct posting_modes {
    // Every usable core serves every pool (cores past the limit sleep): no
    // decision can change what a core does, so no pool events are posted and
    // no quanta tick. Written when a decision is applied.
    std::atomic<bool> every_core_serves_every_pool{false};
    // The installed policy's ext::policy::wants_backlog_events (relaxed: a
    // mode read on the make-ready path; a stale read posts or skips one event).
    std::atomic<bool> backlog_events{false};
    // The installed policy's ext::policy::wants_strand_events (relaxed: as backlog_events).
    std::atomic<bool> strand_events{false};
  };

  // `workers` is the scheduler's (the cores first, then `standbys` standby
  // threads), filled before anything is posted.
  event_board(pool_table& pools, const std::vector<std::unique_ptr<worker>>& workers, unsigned cores,
              unsigned standbys) noexcept
      : pools_(pools), workers_(workers), cores_(cores), standbys_(standbys) {}
  event_board(const event_board&) = delete;
  event_board& operator=(const event_board&) = delete;

  posting_modes modes;

  // ---- the mechanism's side: never blocks, allocates or throws ----
  // Work was made ready at `pool`: became_nonempty if the policy believes
  // it empty, else a backlog event if the policy wants those.
  void note_nonempty(std::uint32_t pool) noexcept;
  // The pool may have become empty; true if this call posted the event
  // anew (it was not pending): a decider::poster caller then sees it
  // decided. One already pending has its decider (its poster, or the policy
  // thread that poster poked), so an idle worker posting it again waits
  // instead of returning to decide it while the policy lock is held.
  bool note_maybe_empty(std::uint32_t pool, decider who = decider::policy_thread) noexcept;
  void post_pool_added(std::uint32_t pool) noexcept { post_event_for_workers(pools_added_, pool); }
  void post_pool_removed(std::uint32_t pool) noexcept { post_event_for_workers(pools_removed_, pool); }
  void post_cores_requested(std::uint32_t pool) noexcept { post_event(cores_requested_, pool); }
  // A make-ready path whose wake-up woke nobody: the pool's new work may
  // wait behind strands of other pools (preemption.hpp watches it).
  void note_work_without_taker(std::uint32_t pool) noexcept;

  // A became_nonempty event is posted and not yet taken (a waiting worker leaves its wait).
  bool nonempty_posted() const noexcept { return became_nonempty_.any(); }
  // Some event is posted and not yet taken by a decision.
  bool events_posted() const noexcept;
  // A pool added or removed is posted and not yet taken.
  bool lifecycle_posted() const noexcept { return pools_added_.any() || pools_removed_.any(); }
  // Wakes the policy thread (it re-reads every bitmap and its deadlines).
  void poke_driver() noexcept;
  // Sets decide_request in v's word; false if the policy put v to sleep.
  bool ask_to_decide(worker& v) noexcept;

  // ---- the policy driver's side ----
  // Calls f(kind, pool) for every posted event, clearing its bit first:
  // removals first (an id removed and taken again since the last take is
  // live, and the policy must hear of it last as added), then additions,
  // pools becoming non-empty and empty, requests for cores, backlogs.
  // Returns when the oldest of them was posted (0: unknown).
  template <class F>
  std::uint64_t take(F&& f) {
    auto collect = [&](event_bitmap& bits, ext::event_kind kind) { bits.take([&](std::uint32_t id) { f(kind, id); }); };
    collect(pools_removed_, ext::event_kind::pool_removed);
    collect(pools_added_, ext::event_kind::pool_added);
    collect(became_nonempty_, ext::event_kind::became_nonempty);
    collect(maybe_empty_, ext::event_kind::became_empty);
    collect(cores_requested_, ext::event_kind::more_cores_requested);
    collect(backlogged_, ext::event_kind::backlog);
    return oldest_event_ns_.exchange(0, std::memory_order_relaxed);  // relaxed: a measurement
  }
  // Calls f(pool) for every pool noted by note_work_without_taker, clearing it first.
  template <class F>
  void take_work_without_taker(F&& f) {
    waiting_unserved_.take(f);
  }
  // The policy thread's sleep: its slot, and the poke it clears before it
  // re-reads everything and tests before it sleeps.
  sleep_slot& driver_slot() noexcept { return driver_slot_; }
  void clear_poke() noexcept { driver_poked_.store(false, std::memory_order_seq_cst); }
  bool poked() const noexcept { return driver_poked_.load(std::memory_order_seq_cst); }

 private:
  // Asks the workers to decide pending events; false when the policy thread must.
  bool ask_workers_to_decide() noexcept;
  // Posts a pool's event for a worker to decide, or the policy thread when
  // no worker can (note_nonempty's path, for the pool table's events).
  void post_event_for_workers(event_bitmap& events, std::uint32_t pool) noexcept;
  // True if the event was not pending before.
  bool post_event(event_bitmap& events, std::uint32_t pool, decider who = decider::policy_thread) noexcept;

  pool_table& pools_;
  const std::vector<std::unique_ptr<worker>>& workers_;
  const unsigned cores_;     // workers_[0..cores_) are the cores the policy decides over
  const unsigned standbys_;  // standby threads after them (preemption)
  // Pool events posted to the policy driver.
  event_bitmap became_nonempty_, maybe_empty_, pools_added_, pools_removed_, cores_requested_, backlogged_;
  // Pools whose new work nobody was counted at (set by the make-ready paths), for preemption.
  event_bitmap waiting_unserved_;
  std::atomic<std::uint64_t> oldest_event_ns_{0};  // when the oldest undecided event was posted (0: none)
  std::atomic<bool> driver_poked_{false};  // the policy changed: recompute the quantum deadline
  sleep_slot driver_slot_;
};

}  // namespace promptly::detail
