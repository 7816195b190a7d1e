// The policy thread: feeds the policy its events (installation, quantum
// ticks, pools added, removed, becoming non-empty or empty, asking for
// cores, a queue forming at a pool with work) with a view of the pools and
// cores, and applies what it decides by setting workers' assignments
// (I-Cilk, Sec. 5: "the master alerts a worker to switch priority by
// setting a per-worker flag, checked at each strand boundary").
//
// Invariants
//  * Only the policy thread, a worker at its loop top (decide_at_loop_top:
//    try_lock, or lock when it is idle) and the API calls that install a
//    policy call into the policy; they hold policy_mutex_, which guards
//    policy_, the quantum state, the seen_* baselines, the latency samples
//    and the trace. No holder waits for a worker, so a worker may wait for it.
//    The mechanism (submitters, wakers, workers, pool creation and removal)
//    only records events: a bit per pool in an event_bitmap and a futex wake
//    of this thread (post_event) or a request to the workers
//    (post_event_for_workers), which never blocks on the policy, allocates
//    or throws, so it is safe on the noexcept wake path of a parked fiber.
//  * A posted event is decided: by this thread, which re-reads every bitmap
//    before it sleeps, or by a worker asked to (ask_workers_to_decide). A
//    decision that overwrites an asked worker's word clears its request;
//    the worker that decided re-reads the pool-table bitmaps afterwards and
//    wakes this thread if one is set (decide_at_loop_top).
//  * pool_record::believed_nonempty is what the policy last saw: every
//    decision sets it from the view it decided on. A submitter pushes first
//    and then exchanges it to true; if it was false, the submitter posts
//    became_nonempty. A decision that clears it re-reads the pool after the
//    clear (both seq-cst), so either the submitter sees false and posts the
//    event, or the decision sees the work and decides again: work never
//    waits in a pool the policy believes empty. A worker that becomes
//    active re-reads the belief after its increment (scheduling_loop.cpp).
//  * The kept view (pool_views_, under policy_mutex_) lists every live or
//    closing pool once, most urgent first; view_index_ maps each listed id
//    to its position; view_busy_ holds, ascending, exactly the positions
//    whose view has ready work. A listed pool's has_ready_work is its
//    belief (both set by the decision that last read it, and a flip of
//    either posts an event that reads it again), so reading again only
//    the pools of the events, of the cores' sets and of the cores misses no
//    flip (refresh_pool_views_locked).
//  * Backlog events (only for a policy that wants_backlog_events) are a
//    hint, not a liveness guarantee: at most one per pool is posted between
//    two decisions (pool_record::backlog_posted, cleared by every view of
//    the pool), and a stale read of either flag posts one more or one fewer.
//    Work is never left behind by a missing one: it is queued at a pool the
//    policy believes non-empty, whose cores take it.
//  * The thread decides on the quantum deadline whatever else wakes it
//    (events never push the deadline out). Quanta run while at least two
//    pools (one, if the policy asks: ticks_while_one_pool_is_busy) had work
//    during the last quantum (believed non-empty now, or
//    reported non-empty since the last tick); otherwise the thread sleeps
//    until an event: with one busy pool every policy shipped gives it all
//    cores whatever it measured, so quanta would only cost wake-ups.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <exception>
#include <thread>

#include "chaos.hpp"
#include "os_time_slice.hpp"
#include "decision.hpp"
#include "scheduler.hpp"

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
// pool must see that decision's store of every_core_serves_every_pool_
// (both seq-cst).
void scheduler::note_nonempty(std::uint32_t pool) noexcept {
  if (every_core_serves_every_pool_.load(std::memory_order_seq_cst)) return;
  pool_record& p = pool_at(pool);
  if (!p.believed_nonempty.exchange(true, std::memory_order_seq_cst)) {
    post_event_for_workers(became_nonempty_, pool);
    return;
  }
  // Already non-empty: no event, unless the policy asked to hear of a queue
  // forming (ext::policy::wants_backlog_events). Without it a pool whose
  // cores are busy queues what arrives until the next tick (README.md,
  // "Backlog events").
  if (backlog_events_.load(std::memory_order_relaxed) && p.injection.size() >= 2 &&
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
bool scheduler::ask_workers_to_decide() noexcept {
  notifier::fence_before_notify();
  bool someone_decides = false;
  bool someone_decides_soon = false;  // a worker looking for work, or working for less than long_strand_ns
  worker* waiting = nullptr;
  const std::uint64_t now = now_ns();
  for (const auto& wp : workers_) {
    worker& v = *wp;
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
void scheduler::post_event_for_workers(event_bitmap& events, std::uint32_t pool) noexcept {
  post_event(events, pool, decider::poster);  // the bit first: whoever is asked below must see it
  if (!ask_workers_to_decide()) poke_driver();
}

bool scheduler::events_posted() const noexcept {
  return became_nonempty_.any() || maybe_empty_.any() || pools_added_.any() || pools_removed_.any() ||
         cores_requested_.any() || backlogged_.any();
}

bool scheduler::ask_to_decide(worker& v) noexcept {
  unsigned word = v.assigned.load(std::memory_order_relaxed);  // relaxed: the CAS re-reads it
  // Release: the worker's acquire at its loop top then sees the event bits set before.
  while (!(word & decide_request) && word != no_pool &&
         !v.assigned.compare_exchange_weak(word, word | decide_request, std::memory_order_release,
                                           std::memory_order_relaxed)) {
  }
  return word != no_pool;
}

bool scheduler::note_maybe_empty(std::uint32_t pool, decider who) noexcept {
  if (every_core_serves_every_pool_.load(std::memory_order_seq_cst)) return false;
  pool_record& p = pool_at(pool);
  if (!p.believed_nonempty.load(std::memory_order_seq_cst) || p.has_ready_work()) return false;
  post_event(maybe_empty_, pool, who);
  return true;
}

// An event's poster either wakes the policy thread or sees to it that a
// worker decides at its loop top (decider::poster: the poster itself, an
// idle worker, or the workers it asks, ask_workers_to_decide): then
// decide_at_loop_top either takes the event bits under the policy lock, or,
// finding the lock held, wakes the thread, which re-reads the bits before
// it sleeps. No event waits for a decision nobody will take.
void scheduler::post_event(event_bitmap& events, std::uint32_t pool, decider who) noexcept {
  // The first event since the thread last decided starts the latency clock
  // (relaxed: a measurement; the event itself is ordered below).
  std::uint64_t none = 0;
  if (oldest_event_ns_.load(std::memory_order_relaxed) == 0)
    oldest_event_ns_.compare_exchange_strong(none, now_ns(), std::memory_order_relaxed);
  // Seq-cst (event_bitmap), then the notifier's fence: the thread's
  // prepare_wait/re-check either sees the bit or is woken (notifier.hpp).
  events.set(pool);
  if (who == decider::poster) return;
  notifier::fence_before_notify();
  notifier::notify(driver_slot_);
}

void scheduler::poke_driver() noexcept {
  driver_poked_.store(true, std::memory_order_seq_cst);  // seq-cst: as post_event
  notifier::fence_before_notify();
  notifier::notify(driver_slot_);
}

namespace {
// The phase interval a worker is in now, not yet added to the accounts.
struct open_interval {
  std::uint32_t pool;
  bool working;
  std::uint64_t ns;
};
open_interval open_interval_of(const worker& w, std::uint64_t now) noexcept {
  const std::uint64_t since = w.phase_since_ns.load(std::memory_order_relaxed);
  return {w.serving.load(std::memory_order_relaxed), w.phase.load(std::memory_order_relaxed) == worker_phase::working,
          now > since ? now - since : 0};
}
double seconds(std::uint64_t ns) noexcept { return static_cast<double>(ns) * 1e-9; }
}  // namespace

// The view a decision is made on. Pools that are live or draining (closing)
// appear, most urgent first; `advance` moves the baselines (quantum ticks),
// so events between ticks see what accrued since the last tick.
//
// The view is kept between decisions (pool_views_, sorted by rank, then
// creation) and only the pools that may have changed are read again: the
// pools of this batch's events, the pools of every core's set and the pool
// each core serves now, and the pools whose cores the last decision changed
// (marked by apply_locked). Any other pool is unserved: no core accrued
// time there, its work did not start or end (a pool emptying or filling
// posts an event, and the belief follows the view, so a flip is never
// missed: decide_locked), and it was neither added nor removed (events
// too), so its view is what it was; only the age of a pool with work is
// brought forward (the elastic policy's deadlines), and its queue length
// may lag until a core serves it (a queue at a pool nobody serves only
// grows, so a non-zero hint stays non-zero). A decision then costs what changed, not the pool count: with
// 4000 idle pools a full read took most of the decision
// (bench/results/core/pools-many/). A full read is done at installation and
// while some core serves every pool (it may accrue time anywhere). A
// quantum tick reads the pools read since the previous tick and the pools
// with work (refresh below); a pool whose tick showed accrued time is read
// again at the next decision, which then shows it none.
void scheduler::refresh_pool_views_locked(bool full, bool advance, std::span<const ext::event> events) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  const std::uint64_t now = now_ns();
  const std::uint32_t end = pools_.id_end();
  if (view_index_.size() < max_pools) {
    view_index_.assign(max_pools, absent_view);
    view_marked_.assign(max_pools, false);
    view_read_since_tick_.assign(max_pools, false);
  }
  full = full || !pool_views_valid_ ||
         std::any_of(applied_.begin(), applied_.end(), [](const pool_set& a) { return a.every(); });
  view_refreshed_.clear();
  auto mark = [&](std::uint32_t id) {
    if (id < end && !view_marked_[id]) {
      view_marked_[id] = true;
      view_refreshed_.push_back(id);
    }
  };
  if (full) {
    for (std::uint32_t id = 0; id < end; ++id) mark(id);
  } else {
    for (const std::uint32_t id : view_dirty_) mark(id);
    for (const ext::event& ev : events) mark(ev.pool);
    if (advance) {
      // A tick restarts every pool's measures and judges stalls: the pools
      // read since the last tick (any may have accrued time) and the pools
      // with work (a stall is queued work nobody ran). A pool in neither was
      // read at or before the last tick with nothing accrued since.
      for (const std::uint32_t id : view_since_tick_) mark(id);
      for (const std::uint32_t at : view_busy_)
        if (at < pool_views_.size()) mark(pool_views_[at].id);
    }
    for (std::size_t c = 0; c < workers_.size(); ++c) {
      mark(workers_[c]->serving.load(std::memory_order_relaxed));
      for (const std::uint32_t id : applied_[c].ranked_ids()) mark(id);
    }
  }
  view_dirty_.clear();
  std::lock_guard identity(pools_.mutex());  // rank, weight, creation: written under it
  bool reorder = false;
  if (advance) {
    for (const std::uint32_t id : view_since_tick_) view_read_since_tick_[id] = false;
    view_since_tick_.clear();
  }
  for (const std::uint32_t id : view_refreshed_) {
    view_marked_[id] = false;
    // A tick's reads start the list afresh: a pool it shows with accrued
    // time is read again at the next decision (below), and joins it then.
    if (!advance && !view_read_since_tick_[id]) {
      view_read_since_tick_[id] = true;
      view_since_tick_.push_back(id);
    }
    pool_record& p = pool_at(id);
    const pool_phase ph = p.phase.load(std::memory_order_seq_cst);
    const bool live = ph == pool_phase::live || ph == pool_phase::closing;
    std::uint32_t at = view_index_[id];
    if (at != absent_view && (!live || pool_view_seq_[at] != p.creation_seq)) {  // gone, or its id taken again
      pool_views_[at].id = ext::no_pool;  // erased below
      view_index_[id] = at = absent_view;
      reorder = true;
    }
    if (!live) continue;
    if (at == absent_view) {
      at = static_cast<std::uint32_t>(pool_views_.size());
      pool_views_.emplace_back();
      pool_view_seq_.push_back(p.creation_seq);
      view_index_[id] = at;
      reorder = true;
    }
    std::uint64_t open_work = 0, open_look = 0;
    for (auto& w : workers_) {
      const open_interval open = open_interval_of(*w, now);
      if (open.pool == id) (open.working ? open_work : open_look) += open.ns;
    }
    unsigned cores = 0;
    for (const pool_set& a : applied_) cores += a.first() == id ? 1 : 0;
    ext::pool_view& v = pool_views_[at];
    if (p.seen_creation_seq != p.creation_seq) {  // a new pool on this record: its accounts restarted
      p.seen_creation_seq = p.creation_seq;
      p.seen_work_ns = p.seen_look_ns = 0;
      p.seen_tasks = 0;
      p.queued_at_tick = false;
    }
    p.backlog_posted.store(false, std::memory_order_relaxed);  // this decision sees the queue
    const std::uint64_t work = p.work_ns.load(std::memory_order_relaxed) + open_work;
    const std::uint64_t look = p.look_ns.load(std::memory_order_relaxed) + open_look;
    v = ext::pool_view{};
    v.id = id;
    v.rank = p.rank;
    v.weight = p.weight;
    v.age = std::chrono::nanoseconds(now > p.created_ns ? now - p.created_ns : 0);
    v.has_ready_work = p.has_ready_work();
    v.queued = p.injection.size();
    v.work_s = seconds(work > p.seen_work_ns ? work - p.seen_work_ns : 0);
    v.look_s = seconds(look > p.seen_look_ns ? look - p.seen_look_ns : 0);
    v.cores = cores;
    v.wants_more_cores = p.wants_more_cores.load(std::memory_order_relaxed);
    v.elastic = p.elastic;
    if (advance) {
      // Relaxed: a statistic; a task counted late only hides a stall for a tick.
      const std::uint64_t tasks = p.tasks.load(std::memory_order_relaxed);
      const bool queued = p.has_queued_work();
      v.stalled = queued && p.queued_at_tick && tasks == p.seen_tasks;
      // The next decision shows what accrued since this tick, and no stall: read it again.
      if (v.stalled || v.work_s > 0 || v.look_s > 0) view_dirty_.push_back(id);
      p.seen_work_ns = work;
      p.seen_look_ns = look;
      p.seen_tasks = tasks;
      p.queued_at_tick = queued;
    }
  }
  if (reorder) {  // a pool came or went: drop the erased, sort by rank, then creation
    std::vector<std::size_t> order;
    order.reserve(pool_views_.size());
    for (std::size_t i = 0; i < pool_views_.size(); ++i)
      if (pool_views_[i].id != ext::no_pool) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (pool_views_[a].rank != pool_views_[b].rank) return pool_views_[a].rank < pool_views_[b].rank;
      return pool_view_seq_[a] < pool_view_seq_[b];
    });
    std::vector<ext::pool_view> views;
    std::vector<std::uint64_t> seqs;
    views.reserve(order.size());
    seqs.reserve(order.size());
    for (const std::size_t i : order) {
      view_index_[pool_views_[i].id] = static_cast<std::uint32_t>(views.size());
      views.push_back(std::move(pool_views_[i]));
      seqs.push_back(pool_view_seq_[i]);
    }
    pool_views_ = std::move(views);
    pool_view_seq_ = std::move(seqs);
  }
  pool_views_valid_ = true;
  // The positions of the pools with ready work, most urgent first
  // (ext::decision::pools_with_work): updated for the pools read again,
  // rebuilt when a pool came or went (positions moved).
  if (reorder) {
    view_busy_.clear();
    for (std::uint32_t at = 0; at < pool_views_.size(); ++at)
      if (pool_views_[at].has_ready_work) view_busy_.push_back(at);
  } else {
    for (const std::uint32_t id : view_refreshed_) {
      const std::uint32_t at = view_index_[id];
      if (at == absent_view) continue;
      const auto it = std::lower_bound(view_busy_.begin(), view_busy_.end(), at);
      const bool listed = it != view_busy_.end() && *it == at;
      if (pool_views_[at].has_ready_work && !listed)
        view_busy_.insert(it, at);
      else if (!pool_views_[at].has_ready_work && listed)
        view_busy_.erase(it);
    }
  }
  views_with_work_.clear();
  for (const std::uint32_t at : view_busy_) {
    ext::pool_view& v = pool_views_[at];
    const std::uint64_t created = pool_at(v.id).created_ns;
    v.age = std::chrono::nanoseconds(now > created ? now - created : 0);
    views_with_work_.push_back(v);
  }
  assert(std::all_of(view_busy_.begin(), view_busy_.end(),
                     [&](std::uint32_t at) { return at < pool_views_.size() && pool_views_[at].has_ready_work; }) &&
         std::is_sorted(view_busy_.begin(), view_busy_.end()) && "view_busy_ lists the pools with work, in order");
  assert(std::is_sorted(pool_views_.begin(), pool_views_.end(),
                        [](const ext::pool_view& a, const ext::pool_view& b) { return a.rank < b.rank; }) &&
         "the view lists pools most urgent first");
}

std::vector<ext::core_view> scheduler::view_cores_locked(bool advance) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  const std::uint64_t now = now_ns();
  if (seen_core_work_ns_.size() != workers_.size()) {
    seen_core_work_ns_.assign(workers_.size(), 0);
    seen_core_look_ns_.assign(workers_.size(), 0);
  }
  // The policy sees the usable cores only (set_core_limit); apply_locked
  // puts the others to sleep.
  std::vector<ext::core_view> cores(usable_cores());
  for (std::size_t c = 0; c < cores.size(); ++c) {
    worker& w = *workers_[c];
    const open_interval open = open_interval_of(w, now);
    const std::uint64_t work = w.work_ns.load(std::memory_order_relaxed) + (open.working ? open.ns : 0);
    const std::uint64_t look = w.look_ns.load(std::memory_order_relaxed) + (open.working ? 0 : open.ns);
    ext::core_view& v = cores[c];
    v.index = static_cast<unsigned>(c);
    const pool_set& a = applied_[c];
    v.target = a.target();
    v.assigned = a.first();
    v.pools.assign(a.ranked_ids().begin(), a.ranked_ids().end());
    v.serving = open.pool;
    v.work_s = seconds(work > seen_core_work_ns_[c] ? work - seen_core_work_ns_[c] : 0);
    v.look_s = seconds(look > seen_core_look_ns_[c] ? look - seen_core_look_ns_[c] : 0);
    if (advance) {
      seen_core_work_ns_[c] = work;
      seen_core_look_ns_[c] = look;
    }
  }
  return cores;
}

// Cores whose set's most urgent pool is each pool id ever made (cores
// serving every pool count nowhere). The caller holds policy_mutex_.
std::vector<unsigned> scheduler::cores_by_pool() const {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::vector<unsigned> cores(pools_.id_end(), 0);
  for (const pool_set& a : applied_)
    if (const std::uint32_t first = a.first(); first < cores.size()) ++cores[first];
  return cores;
}

// One decision on one view for a batch of events (coalesced: the policy
// hears each event, in order, then the runtime applies what it did once).
void scheduler::decide_locked(std::vector<ext::event> events) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  while (!events.empty()) {
    bool tick = false, installed = false;
    for (const ext::event& ev : events) {
      tick = tick || ev.kind == ext::event_kind::quantum;
      installed = installed || ev.kind == ext::event_kind::installed;
    }
    refresh_pool_views_locked(installed, tick, events);
    const std::span<const ext::pool_view> pools = pool_views_;
    decision_impl d(pools, view_index_, views_with_work_, view_cores_locked(tick), quantum_, installed);
    try {
      for (const ext::event& ev : events) policy_->on_event(ev, d);
      apply_locked(d.resolve());
    } catch (...) {
      // The beliefs below were not set from this view: the retry reads these pools again.
      view_dirty_.insert(view_dirty_.end(), view_refreshed_.begin(), view_refreshed_.end());
      throw;
    }
    if (tracing_) [[unlikely]]
      policy_trace_.record(trace_kind::decision, now_ns(), events.size() == 1 ? events[0].pool : no_pool,
                           static_cast<std::uint32_t>(events.size()));
    quantum_ = d.quantum();
    if (tick) {  // the pools the tick read: any other accrued nothing in the quantum (refresh_pool_views_locked)
      last_quantum_.clear();
      for (const std::uint32_t id : view_refreshed_)
        if (view_index_[id] != absent_view) last_quantum_.push_back(pool_views_[view_index_[id]]);
    }
    for (const ext::event& ev : events)
      if (ev.kind == ext::event_kind::more_cores_requested)
        if (pool_record* p = find_pool(ev.pool)) {
          p->wants_more_cores.store(false, std::memory_order_relaxed);
          view_dirty_.push_back(ev.pool);  // the kept view must not repeat the request
        }
    ++decisions_;
    trace_locked(pools);
    // The belief follows the view. A flip the policy was not told of by an
    // event of this batch becomes an event of the next one: a pool seen
    // empty here is no news to the worker that reports it a moment later
    // (handle_events_locked drops it), so an event-driven policy would
    // never hear that the pool emptied (or, symmetrically, filled).
    auto told = [&](ext::event_kind kind, ext::pool_id id) {
      return std::any_of(events.begin(), events.end(), [&](const ext::event& e) { return e.kind == kind && e.pool == id; });
    };
    // Only the pools this view read again can have flipped (refresh_pool_views_locked).
    std::vector<ext::event> next;
    for (const std::uint32_t id : view_refreshed_) {
      if (view_index_[id] == absent_view) continue;
      const ext::pool_view& v = pool_views_[view_index_[id]];
      pool_record& p = pool_at(v.id);
      const bool was = p.believed_nonempty.exchange(v.has_ready_work, std::memory_order_seq_cst);
      if (!v.has_ready_work && p.has_ready_work()) {  // work arrived while we decided
        p.believed_nonempty.store(true, std::memory_order_seq_cst);
        next.push_back({ext::event_kind::became_nonempty, v.id, {}});
      } else if (was && !v.has_ready_work && !told(ext::event_kind::became_empty, v.id)) {
        next.push_back({ext::event_kind::became_empty, v.id, {}});
      } else if (!was && v.has_ready_work && !told(ext::event_kind::became_nonempty, v.id)) {
        next.push_back({ext::event_kind::became_nonempty, v.id, {}});
      }
    }
    events = std::move(next);
  }
}

unsigned scheduler::usable_cores() const noexcept {
  const unsigned limit = core_limit_.load(std::memory_order_relaxed);  // relaxed: written under policy_mutex_, which the readers hold
  return limit == 0 ? worker_count() : limit;
}

// Publishes the resolved assignment of the usable cores (the cores past
// the limit sleep). A core whose assignment changed gets a new word (a
// one-pool set is the pool id; a larger set, or every pool, is published in
// the worker's buffer first, assignment.hpp) and is woken: a waiting worker
// re-reads its word after preparing to wait (`moved`) and leaves its wait.
void scheduler::apply_locked(const std::vector<pool_set>& next) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  assert(next.size() == usable_cores() && "the policy decided over the usable cores");
  const bool every = !next.empty() && std::all_of(next.begin(), next.end(), [](const pool_set& a) { return a.every(); });
  // Seq-cst, before the words: a submitter that reads the new words also
  // reads this (note_nonempty).
  if (every_core_serves_every_pool_.load(std::memory_order_relaxed) != every)
    every_core_serves_every_pool_.store(every, std::memory_order_seq_cst);
  notifier::fence_before_notify();
  for (std::size_t c = 0; c < workers_.size(); ++c) {
    worker& w = *workers_[c];
    const pool_set target = c < next.size() ? next[c] : pool_set::none();
    if (applied_[c] == target) {
      // A working worker serving below ready work of its ranked set is asked
      // to re-walk it (a waiting one steals from its whole set anyway). Its
      // loop top would take that work (pool_to_serve), but a task that runs
      // long, or a deque that keeps it busy at the less urgent pool, may
      // keep it from its loop top; decide_request parks the task at its
      // next strand boundary. A pool ranked above with work in its workers'
      // deques sends no event (it was never empty), so without this a
      // worker that donated itself stayed away until its deque ran dry.
      if (!notifier::is_waiting(w.slot) && ready_work_ranked_above(target, w.serving.load(std::memory_order_relaxed)))
        ask_to_decide(w);  // relaxed serving: a hint; the loop top decides
      continue;
    }
    for (const std::uint32_t id : applied_[c].ranked_ids()) view_dirty_.push_back(id);  // its cores changed
    applied_[c] = target;
    const unsigned word = target.asleep()                                  ? no_pool
                          : target.what == pool_set::kind::pools && target.count == 1 ? target.ids[0]
                                                                         : w.published.publish(target);
    w.reassigned_ns.store(now_ns(), std::memory_order_relaxed);  // relaxed: a statistic (worker.hpp)
    // Seq-cst: a worker about to sleep re-reads its assignment after
    // preparing to wait, and notify() below then finds it waiting.
    w.assigned.store(word, std::memory_order_seq_cst);
    notifier::notify(w.slot);
  }
}

void scheduler::trace_locked(std::span<const ext::pool_view> pools) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (!trace_.is_open()) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const std::vector<unsigned> cores = cores_by_pool();  // after the decision was applied
  for (const ext::pool_view& v : pools) {
    double util = 0;
    for (const ext::pool_view& q : last_quantum_)
      if (q.id == v.id) util = q.utilization();
    trace_ << t << ',' << policy_->name() << ',' << v.id << ',' << policy_->desire(v.id) << ',' << cores[v.id] << ',' << util << ','
           << (pool_at(v.id).has_ready_work() ? 1 : 0) << '\n';
  }
}

void scheduler::handle_events_locked() {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  // Take every posted event first (the bitmaps clear as they are read), then
  // decide on them in one batch; if the policy throws, they all go back.
  std::vector<ext::event> events;
  auto collect = [&](event_bitmap& bits, ext::event_kind kind) {
    bits.take([&](std::uint32_t id) { events.push_back({kind, id, {}}); });
  };
  // Removals first: an id removed and taken again since the last wake is
  // live, and the policy must hear of it last as added.
  collect(pools_removed_, ext::event_kind::pool_removed);
  collect(pools_added_, ext::event_kind::pool_added);
  collect(became_nonempty_, ext::event_kind::became_nonempty);
  collect(maybe_empty_, ext::event_kind::became_empty);
  collect(cores_requested_, ext::event_kind::more_cores_requested);
  collect(backlogged_, ext::event_kind::backlog);
  const std::uint64_t posted_ns = oldest_event_ns_.exchange(0, std::memory_order_relaxed);
  std::vector<ext::event> decide;
  for (const ext::event& ev : events) {
    if (ev.kind == ext::event_kind::became_nonempty) {
      if (every_core_serves_every_pool_.load(std::memory_order_relaxed)) continue;
      if (std::find(nonempty_since_tick_.begin(), nonempty_since_tick_.end(), ev.pool) == nonempty_since_tick_.end())
        nonempty_since_tick_.push_back(ev.pool);
    } else if (ev.kind == ext::event_kind::became_empty) {
      if (every_core_serves_every_pool_.load(std::memory_order_relaxed)) continue;
      const pool_record& p = pool_at(ev.pool);
      if (!p.believed_nonempty.load(std::memory_order_seq_cst) || p.has_ready_work()) continue;  // not news
    }
    decide.push_back(ev);
  }
  try {
    decide_locked(decide);
  } catch (...) {
    // Put every event back, then report to the caller.
    for (const ext::event& ev : events) {
      switch (ev.kind) {
        case ext::event_kind::pool_added: pools_added_.set(ev.pool); break;
        case ext::event_kind::pool_removed: pools_removed_.set(ev.pool); break;
        case ext::event_kind::became_nonempty: became_nonempty_.set(ev.pool); break;
        case ext::event_kind::became_empty: maybe_empty_.set(ev.pool); break;
        case ext::event_kind::backlog: backlogged_.set(ev.pool); break;
        default: cores_requested_.set(ev.pool);
      }
    }
    throw;
  }
  if (posted_ns != 0 && !events.empty()) record_latency_locked(now_ns() - posted_ns);
}

void scheduler::record_latency_locked(std::uint64_t ns) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  constexpr std::size_t kept = 4096;  // the most recent decisions
  if (latency_ns_.size() < kept)
    latency_ns_.push_back(ns);
  else
    latency_ns_[latency_next_ % kept] = ns;
  ++latency_next_;
}

// A worker at its loop top decides pending events when no decision is under
// way. If the policy throws, the events go back and the policy thread, woken
// when they were posted, retries. Only the policy thread arms the quantum
// timer, so it is woken when quanta may have to start.
//
// A worker with work of its own never waits for the lock (try_lock): it goes
// on working, and the holder or the policy thread decides. An idle worker
// (`idle`: no continuation, an empty deque) waits for the holder instead.
// Until the events are decided it has nothing to run: moved() holds while a
// became_nonempty bit is set, so it cannot even look for queued work. When
// it went back to its loop top instead, it spun there, and a holder
// descheduled on the same CPU could not finish until the kernel preempted
// the spinner: with one worker on one CPU, aps's policy thread preempted
// mid-tick left ready client loops waiting 4.9-5.3 ms
// (bench/results/apps/open-loop/no-compression/). Waiting cannot deadlock:
// no holder of policy_mutex_ waits for a worker (the policy thread, the
// API calls that install a policy or read stats, and loop tops only decide,
// and a policy's on_event must never block: docs/policies.md, "Rules").
void scheduler::decide_at_loop_top(bool idle) noexcept {
  std::unique_lock lock(policy_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (!idle) {
      // Posted without waking the thread (post_event, decider::poster): a
      // failed try_lock orders nothing, so the holder may have missed them.
      if (events_posted()) poke_driver();
      return;
    }
    lock.lock();  // throws only if this thread held the lock, which a loop top never does
    if (!events_posted()) return;  // the holder decided them
  }
  if (stopping_.load(std::memory_order_relaxed)) return;
  try {
    handle_events_locked();
  } catch (...) {
    poke_driver();  // the events are back; the policy thread retries them (and reports)
    return;
  }
  const bool arm_quantum =
      !next_quantum_ && quantum_.count() > 0 && !every_core_serves_every_pool_.load(std::memory_order_relaxed);
  lock.unlock();
  // A pool added or removed while this decision ran may have asked a worker
  // whose word the decision then overwrote (a new assignment clears
  // decide_request): nobody would be asked any more. (became_nonempty is
  // safe: every loop top reads its bits.) The fence pairs with the poster's
  // (ask_workers_to_decide): its request precedes the overwriting store in
  // the word's order, so the poster's fence precedes this one and the bit
  // it set before is seen here.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (arm_quantum || pools_added_.any() || pools_removed_.any()) poke_driver();
}

// Ticks when the deadline has passed, and (re)arms or disarms the quantum.
void scheduler::advance_quantum_locked(std::chrono::steady_clock::time_point now) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (quantum_.count() == 0 || every_core_serves_every_pool_.load(std::memory_order_relaxed)) {
    next_quantum_.reset();
    nonempty_since_tick_.clear();
    return;
  }
  auto busy_pools = [&] {
    // The pools believed non-empty are those with work at the last view
    // (the belief follows the view, decide_locked): no walk of every pool.
    std::vector<std::uint32_t> busy = nonempty_since_tick_;
    for (const std::uint32_t at : view_busy_) {
      if (busy.size() >= nonempty_since_tick_.size() + 4) break;
      if (at < pool_views_.size() && pool_at(pool_views_[at].id).believed_nonempty.load(std::memory_order_relaxed))
        busy.push_back(pool_views_[at].id);
    }
    std::sort(busy.begin(), busy.end());
    return static_cast<std::size_t>(std::unique(busy.begin(), busy.end()) - busy.begin());
  };
  if (!next_quantum_) {
    if (busy_pools() >= busy_pools_for_quanta_) {
      next_quantum_ = now + quantum_;
      last_tick_ = now;
    }
    return;
  }
  if (now < *next_quantum_) return;
  decide_locked({{ext::event_kind::quantum, ext::no_pool, std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_tick_)}});
  last_tick_ = now;
  ++quanta_;
  const bool keep_going = busy_pools() >= busy_pools_for_quanta_;
  nonempty_since_tick_.clear();
  if (!keep_going || quantum_.count() == 0) {
    next_quantum_.reset();
    return;
  }
  *next_quantum_ += quantum_;
  if (*next_quantum_ < now) *next_quantum_ = now + quantum_;  // fell behind (the VM paused us): do not burst
}

void scheduler::driver_main() {
  (void)request_os_time_slice(cfg_.os_time_slice);
  using clock = std::chrono::steady_clock;
  bool failed_before = false;
  for (;;) {
    std::optional<clock::time_point> wake_at;
    {
      std::lock_guard lock(policy_mutex_);
      if (stopping_.load(std::memory_order_relaxed)) return;
      driver_poked_.store(false, std::memory_order_seq_cst);
      try {
        chaos::point();
        handle_events_locked();
        advance_quantum_locked(clock::now());
        failed_before = false;
      } catch (const std::exception& e) {  // handle_events_locked put the undecided events back
        // A policy that throws must not stop the thread: report once, and
        // retry the same events shortly.
        if (!failed_before) std::fprintf(stderr, "promptly: policy decision failed: %s; retrying\n", e.what());
        failed_before = true;
        wake_at = clock::now() + std::chrono::milliseconds(1);
      }
      if (!wake_at) wake_at = next_quantum_;
    }
    notifier::prepare_wait(driver_slot_);
    if (stopping_.load(std::memory_order_seq_cst) || events_posted() || driver_poked_.load(std::memory_order_seq_cst)) {
      notifier::cancel_wait(driver_slot_);
      continue;
    }
    if (!wake_at) {
      notifier::commit_wait(driver_slot_);
      continue;
    }
    const auto left = *wake_at - clock::now();
    if (left <= clock::duration::zero()) {
      notifier::cancel_wait(driver_slot_);
      continue;
    }
    notifier::commit_wait(driver_slot_, std::chrono::duration_cast<std::chrono::nanoseconds>(left) +
                                            std::chrono::nanoseconds(1));
  }
}

void scheduler::set_policy(const std::string& name) {
  std::unique_ptr<ext::policy> p = ext::make_policy(name, cfg_.aps, cfg_.fair);
  std::lock_guard lock(policy_mutex_);
  install_policy_locked(std::move(p));
  cfg_.policy = name;
}

void scheduler::set_policy(std::unique_ptr<ext::policy> p) {
  if (p == nullptr) throw std::invalid_argument("promptly: set_policy given a null policy");
  std::lock_guard lock(policy_mutex_);
  const std::string name(p->name());
  install_policy_locked(std::move(p));
  cfg_.policy = name;
}

void scheduler::set_core_limit(unsigned n) {
  if (n > worker_count())
    throw std::invalid_argument("promptly: set_core_limit(" + std::to_string(n) + ") exceeds the runtime's " +
                                std::to_string(worker_count()) + " workers (0 = no limit)");
  std::lock_guard lock(policy_mutex_);
  const unsigned previous = core_limit_.load(std::memory_order_relaxed);
  if (previous == n) return;
  core_limit_.store(n, std::memory_order_relaxed);  // relaxed: readers hold policy_mutex_ (stats reads a setting)
  // The policy decides again from scratch over the new set of cores, as
  // when it was installed (docs/policies.md, "Core limit").
  try {
    decide_locked({{ext::event_kind::installed, ext::no_pool, {}}});
  } catch (...) {
    core_limit_.store(previous, std::memory_order_relaxed);
    throw;
  }
  next_quantum_.reset();
  nonempty_since_tick_.clear();
  poke_driver();
}

void scheduler::set_fairness(std::vector<long long> weights) {
  (void)ext::fair_shares(weights, level_count());  // throws before anything changes
  std::lock_guard lock(policy_mutex_);
  {
    std::lock_guard identity(pools_.mutex());
    for (unsigned l = 0; l < level_count(); ++l) pool_at(l).weight = level_weight(weights, l);
  }
  pool_views_valid_ = false;  // weights changed without an event: the next view reads every pool
  cfg_.fair.weights = std::move(weights);  // the round stays as configured
  if (cfg_.policy == "fair") install_policy_locked(ext::make_policy("fair", cfg_.aps, cfg_.fair));
}

// The new policy places every core (an `installed` event decided from
// scratch). If it throws, the previous policy stays installed.
void scheduler::install_policy_locked(std::unique_ptr<ext::policy> p) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::unique_ptr<ext::policy> previous = std::move(policy_);
  const auto previous_quantum = quantum_;
  const auto previous_busy = busy_pools_for_quanta_;
  policy_ = std::move(p);
  busy_pools_for_quanta_ = policy_->ticks_while_one_pool_is_busy() ? 1 : 2;
  quantum_ = std::chrono::microseconds{0};
  const bool previous_switch = switch_when_out_of_work_.load(std::memory_order_relaxed);
  // Relaxed: a mode the workers read at their next boundary (see switches_when_out_of_work).
  switch_when_out_of_work_.store(policy_->switches_only_when_out_of_work(), std::memory_order_relaxed);
  const bool previous_backlog = backlog_events_.load(std::memory_order_relaxed);
  backlog_events_.store(policy_->wants_backlog_events(), std::memory_order_relaxed);  // relaxed: see scheduler.hpp
  try {
    decide_locked({{ext::event_kind::installed, ext::no_pool, {}}});
  } catch (...) {
    policy_ = std::move(previous);
    quantum_ = previous_quantum;
    busy_pools_for_quanta_ = previous_busy;
    switch_when_out_of_work_.store(previous_switch, std::memory_order_relaxed);
    backlog_events_.store(previous_backlog, std::memory_order_relaxed);
    throw;
  }
  next_quantum_.reset();
  nonempty_since_tick_.clear();
  poke_driver();
}

std::string scheduler::policy_name() const {
  std::lock_guard lock(policy_mutex_);
  return std::string(policy_->name());
}

namespace {
double percentile_us(std::vector<std::uint64_t> v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) * 1e-3;
}
}  // namespace

runtime_stats scheduler::stats() const {
  std::lock_guard lock(policy_mutex_);
  runtime_stats s;
  s.policy = std::string(policy_->name());
  s.workers = worker_count();
  s.core_limit = core_limit();
  s.fibers = fibers_.count();
  s.decisions = decisions_;
  s.quanta = quanta_;
  s.blocked_waits = blocked_waits_.load(std::memory_order_relaxed);
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
  const std::uint32_t end = pools_.id_end();
  const std::vector<unsigned> cores = cores_by_pool();
  for (std::size_t c = 0; c < workers_.size(); ++c) {
    const auto& w = workers_[c];
    worker_state ws;
    ws.serving = w->serving.load(std::memory_order_relaxed);
    const pool_set& a = applied_[c];
    ws.assigned = a.asleep() ? -1 : a.every() ? static_cast<int>(ws.serving) : static_cast<int>(a.first());
    for (const std::uint32_t id : a.ranked_ids()) ws.pools.push_back(static_cast<int>(id));
    ws.every_pool = a.every();
    const bool asleep = w->slot.state.load(std::memory_order_relaxed) == sleep_slot::sleeping;
    ws.state = asleep ? "sleeping" : w->phase.load(std::memory_order_relaxed) == worker_phase::working ? "working" : "looking";
    ws.cpu = w->cpu;
    ws.os_time_slice_us = w->os_time_slice_us.load(std::memory_order_relaxed);  // relaxed: a statistic
    s.sleeping_workers += asleep ? 1 : 0;
    s.worker_states.push_back(std::move(ws));
  }
  const std::uint64_t now = now_ns();
  std::lock_guard identity(pools_.mutex());  // rank, weight: written under it
  for (std::uint32_t id = 0; id < end; ++id) {
    const pool_record& p = pool_at(id);
    const pool_phase ph = p.phase.load(std::memory_order_relaxed);
    if (ph != pool_phase::live && ph != pool_phase::closing) continue;
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
    ps.allotted = cores[id];
    ps.has_ready_work = p.has_ready_work();
    for (const ext::pool_view& q : last_quantum_)
      if (q.id == id) {
        ps.utilization = q.utilization();
        ps.last_work_s = q.work_s;
        ps.last_look_s = q.look_s;
      }
    ps.work_s = seconds(p.work_ns.load(std::memory_order_relaxed));
    ps.look_s = seconds(p.look_ns.load(std::memory_order_relaxed));
    for (auto& w : workers_)
      if (const open_interval open = open_interval_of(*w, now); open.pool == id)
        (open.working ? ps.work_s : ps.look_s) += seconds(open.ns);
    ps.tasks_run = p.tasks.load(std::memory_order_relaxed);
    ps.switches_in = p.switches_in.load(std::memory_order_relaxed);
    (id < level_count() ? s.levels : s.pools).push_back(ps);
  }
  return s;
}

}  // namespace promptly::detail
