// Creating, removing and recycling pools on the pool table
// (pool_table.hpp), admission, and the paths that make work ready at a pool.
//
// Invariants
//  * An id names one pool at a time. create_pool takes a free id (or the
//    next unused one); removal marks the record `closing` while it drains,
//    then `free` and returns the id. The pool is quiescent then (no task of
//    it exists anywhere), so what may still hold the id is harmless when the
//    id is taken again: a worker assigned to it or serving it (it serves the
//    new pool until the policy thread, told of the removal and the
//    creation, assigns it), a thief probing its empty deques. Records are
//    type-stable, so no reader ever touches freed memory.
//  * Admission against removal (Dekker, both seq-cst): admit counts first,
//    then reads the phase; remove_pool stores `closing` first, then waits
//    for the count to drain. Either the submission sees `closing` and is
//    refused (uncounting itself), or the remover waits for it to finish.
//  * remove_pool never polls: it waits on pool_removal_event (parking the
//    calling task's fiber, so its worker is free to serve the pool), which
//    the pool's last active worker leaving or its last counted task
//    finishing wakes; every task of a pool runs on a worker active in it,
//    parked tasks are counted (parking.cpp), and a task taken from the
//    injection queue is counted there until its worker is active (the
//    check reads the queue before num_actives: scheduling_loop.cpp), so
//    the pool cannot go quiet without one of those wakes or the waiter
//    seeing it.
//  * on_drained notices (pool.hpp, pool_table.hpp): remove_pool runs what is left when it frees the record
//    (the pool holds no work then), so no notice is left behind and none
//    runs for the next pool on the id. It does not wait for notices other
//    threads took: waiting made the job server's reaper, woken by such a
//    notice on that notice's core, wait a futex round trip for it (remove
//    p99 26 us, against 1.5 us without: ab-drain-notice/).
//  * The make-ready paths (inject, make_ready, inject_batch) never
//    allocate, never throw and never call a policy: they push on an
//    intrusive queue or the worker's deque, record an event bit and wake.
#include <algorithm>
#include <cassert>
#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "chaos.hpp"
#include "promptly/errors.hpp"
#include "scheduler.hpp"

namespace promptly::detail {

namespace {

// Fault injection (chaos.hpp, delay_removal_checks): waits until a waker
// took w from `slot` (at most 5 ms), then 1 ms more.
void linger_until_taken(std::atomic<waiter*>& slot, waiter* w) noexcept {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
  // Relaxed: a fault injection's poll; the caller's own accesses keep their orders.
  while (slot.load(std::memory_order_relaxed) == w && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Lets remove_pool wait (park its fiber when called from a task, else block
// its thread) until the pool is drained (no counted work, no active worker)
// and quiescent (nothing queued, running or parked in it: children that
// tasks of other pools spawned into it too). Both draining ends wake it:
// the last counted task (count_finished) when nobody is active, and the
// last active worker when it leaves (become_inactive), whatever the count.
// That suffices for quiescence as well: a task runs only on a worker
// active in its pool, a parked task's count drops while the worker that
// resumes it is active there, and a task taken from the injection queue
// stays counted there until its worker is active (scheduling_loop.cpp);
// so the moment the pool goes quiet is the moment its last active worker
// leaves, or one the waiter sees when it registers.
// Waking only at the first gave the worker's core to the woken remover
// before the worker had left the pool (a woken thread preempts its waker),
// and the remover polled for it with yield, handing its core away for a
// time slice (remove p99 522 us before, 43 us after, under 75% load:
// bench/results/jobs/overheads/ab-pool-events/). Polling for quiescence on
// a worker's thread also kept the remover's pool busy, so a policy giving
// cores to the most urgent busy pool (prompt, equi, drep) never gave the
// pool waited for one.
struct pool_removal_event {
  pool_record& pool;
  bool ready() const noexcept { return removable(pool); }
  static bool removable(pool_record& p) noexcept {
    if (!p.drained()) return false;
    // Deques that thieves emptied in the muggable list (pool.hpp) would
    // make the pool look queued for ever: only a worker serving the pool
    // drops them otherwise, and none may come to a pool with no work.
    p.drop_emptied_muggable();
    return p.quiescent();
  }
  bool try_register(waiter* w) noexcept {
    // The event lives on the remover's stack. Once w is published a waker
    // may resume the remover, which returns and ends the event, so nothing
    // below reads *this: only the record, which is type-stable (reading
    // `pool` through a dead event was a UBSan report under churn).
    pool_record& p = pool;
    // Seq-cst: count_finished and become_inactive decrement, then read the
    // waiter; we store the waiter, then re-read the counts. One of us sees
    // the other.
    p.drain_waiter.store(w, std::memory_order_seq_cst);
    if (chaos::removal_check_is_late()) [[unlikely]]
      linger_until_taken(p.drain_waiter, w);
    if (!removable(p)) return true;
    // Ready already: withdraw, unless a waker took the waiter (it wakes it).
    return p.drain_waiter.exchange(nullptr, std::memory_order_seq_cst) != w;
  }
};

std::string pool_name(std::uint32_t id, unsigned levels) {
  return id < levels ? "level " + std::to_string(id) : "pool " + std::to_string(id);
}

}  // namespace

}  // namespace promptly::detail

namespace promptly {
void validate(const elastic_params& e) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("promptly: pool_options::elastic: " + what); };
  auto finite = [](double v) { return v == v && v != std::numeric_limits<double>::infinity(); };
  if (!(e.work_ms > 0) || !finite(e.work_ms)) fail("work_ms = " + std::to_string(e.work_ms) + " must be finite and > 0");
  if (!(e.span_ms > 0) || e.span_ms > e.work_ms)
    fail("span_ms = " + std::to_string(e.span_ms) + " must be > 0 and <= work_ms = " + std::to_string(e.work_ms));
  if (!(e.period_min_ms > 0) || !finite(e.period_min_ms))
    fail("period_min_ms = " + std::to_string(e.period_min_ms) + " must be finite and > 0");
  if (!(e.period_max_ms >= e.period_min_ms) || !finite(e.period_max_ms))
    fail("period_max_ms = " + std::to_string(e.period_max_ms) + " must be finite and >= period_min_ms = " +
         std::to_string(e.period_min_ms));
  if (!(e.elasticity > 0) || !finite(e.elasticity))
    fail("elasticity = " + std::to_string(e.elasticity) + " must be finite and > 0");
}
}  // namespace promptly

namespace promptly::detail {

std::uint32_t scheduler::create_pool(const pool_options& opts) {
  if (!(opts.weight >= 0) || opts.weight == std::numeric_limits<double>::infinity())
    throw std::invalid_argument("promptly: pool weight " + std::to_string(opts.weight) + " must be finite and >= 0");
  if (opts.elastic) validate(*opts.elastic);
  if (!accepting_.load(std::memory_order_seq_cst))
    throw runtime_stopped("promptly::runtime is shutting down; no pool was created");
  std::uint32_t id;
  {
    std::lock_guard lock(pools_.mutex());
    pool_record& p = pools_.open_locked();  // throws when every id is in use
    id = p.id;
    p.rank = opts.rank;
    p.weight = opts.weight;
    p.elastic = opts.elastic;
    p.created_ns = now_ns();
    p.fixed = false;
    p.wants_more_cores.store(false, std::memory_order_relaxed);
    // A new life: its accounts restart (relaxed: statistics; the pool is
    // reachable only once its id is handed out below).
    p.work_ns.store(0, std::memory_order_relaxed);
    p.look_ns.store(0, std::memory_order_relaxed);
    p.tasks.store(0, std::memory_order_relaxed);
    p.switches_in.store(0, std::memory_order_relaxed);
    p.phase.store(pool_phase::live, std::memory_order_seq_cst);  // seq-cst: pairs with admit's read
  }
  board_.post_pool_added(id);
  return id;
}

void scheduler::remove_pool(std::uint32_t id) {
  pool_record* p = find_pool(id);
  if (const worker_view* w = reload_current_worker(); owns(w) && w->pool == id)
    throw std::logic_error("promptly: remove_pool: called from a task of " + pool_name(id, level_count()) +
                           ", which would wait for itself; remove a pool from outside it");
  {
    std::lock_guard lock(pools_.mutex());
    if (p == nullptr || p->phase.load(std::memory_order_relaxed) != pool_phase::live)
      throw std::out_of_range("promptly: remove_pool: " + pool_name(id, level_count()) +
                              " does not exist (never created, or removed already)");
    if (p->fixed)
      throw std::invalid_argument("promptly: remove_pool: " + pool_name(id, level_count()) +
                                  " is a priority level; levels live as long as the runtime");
    p->phase.store(pool_phase::closing, std::memory_order_seq_cst);  // seq-cst: pairs with admit's count
  }
  // Every counted task of the pool (submissions, asyncs, graph runs)
  // finishes, the worker that ran the last one leaves the pool, and nothing
  // of it remains anywhere (tasks of other pools may have spawned children
  // into it or parked in it). The policy keeps serving the pool meanwhile
  // (it is in the view while closing). From a task this parks the task's
  // fiber, so its worker is free: the remover's own pool may look idle and
  // the policy may give this pool its core.
  pool_removal_event removable{*p};
  while (!removable.ready()) wait_for(removable);
  p->believed_nonempty.store(false, std::memory_order_relaxed);
  // A notice registered while the pool drained may still wait for a
  // decrement that is late (an admission refused as closing uncounts
  // itself); the pool holds no work now, so it is drained: run it here,
  // before the id can name another pool. Notices other threads took run on
  // there, unwaited for (runtime.hpp).
  std::vector<std::function<void()>> due;
  {
    std::lock_guard lock(pools_.mutex());
    due = pool_table::take_drain_notices_locked(*p, true);
    pools_.free_locked(*p);
  }
  pool_table::run_drain_notices(due);
  board_.post_pool_removed(id);
}

void scheduler::on_drained(std::uint32_t id, std::function<void()> fn) {
  if (!fn) throw std::invalid_argument("promptly: on_drained: the callback is empty");
  pool_record* p = find_pool(id);
  std::vector<std::function<void()>> due;
  {
    std::lock_guard lock(pools_.mutex());
    if (p == nullptr || p->phase.load(std::memory_order_relaxed) == pool_phase::free)
      throw std::out_of_range("promptly: on_drained: " + pool_name(id, level_count()) +
                              " does not exist (never created, or removed already)");
    p->drain_notices.push_back(std::move(fn));  // may throw bad_alloc: then nothing is registered
    // Seq-cst: the mirror first, then the counts; the draining threads
    // decrement a count first, then read the mirror (pool.hpp).
    p->drain_notice_count.store(static_cast<unsigned>(p->drain_notices.size()), std::memory_order_seq_cst);
    due = pool_table::take_drain_notices_locked(*p, false);  // drained already: runs now, on this thread
  }
  pool_table::run_drain_notices(due);
}

pool_stats scheduler::stats_of(std::uint32_t id) const {
  if (std::optional<pool_stats> s = driver_.stats_of(id)) return *s;
  throw std::out_of_range("promptly: stats: " + pool_name(id, level_count()) +
                          " does not exist (never created, or removed already)");
}

void scheduler::request_cores(std::uint32_t id) {
  check_pool(id);
  pool_at(id).wants_more_cores.store(true, std::memory_order_relaxed);  // relaxed: the event below carries it
  board_.post_cores_requested(id);
}

void scheduler::check_pool(std::uint32_t id) const {
  const pool_record* p = find_pool(id);
  const pool_phase ph = p != nullptr ? p->phase.load(std::memory_order_seq_cst) : pool_phase::free;
  if (ph == pool_phase::live) return;
  if (ph == pool_phase::closing)
    throw pool_removed("promptly: " + pool_name(id, level_count()) + " is being removed; the work was not accepted");
  throw std::out_of_range("promptly: level " + std::to_string(id) + " does not exist, nor a pool " + std::to_string(id) +
                          " (the runtime has " + std::to_string(level_count()) + " levels, 0.." +
                          std::to_string(level_count() - 1) +
                          ", and the live pools made by create_pool; set runtime_config::levels)");
}

void scheduler::admit(std::uint32_t id, admission from) {
  check_pool(id);  // names the problem before anything is counted
  // Count first, then check (seq-cst both): shutdown and remove_pool clear
  // their flag before they wait for the counts to drain.
  outstanding_.fetch_add(1, std::memory_order_seq_cst);
  pool_record& p = pool_at(id);
  p.outstanding.fetch_add(1, std::memory_order_seq_cst);
  const bool stopped = from == admission::from_outside && !accepting_.load(std::memory_order_seq_cst);
  if (stopped || p.phase.load(std::memory_order_seq_cst) != pool_phase::live) {
    count_finished(id);
    if (stopped) throw runtime_stopped("promptly::runtime is shutting down; the submitted work was not accepted");
    check_pool(id);  // throws pool_removed
  }
}

void scheduler::count_started(std::uint32_t id) noexcept {
  outstanding_.fetch_add(1, std::memory_order_seq_cst);
  pool_at(id).outstanding.fetch_add(1, std::memory_order_seq_cst);
}

void scheduler::count_finished(std::uint32_t id) noexcept {
  pool_record& p = pool_at(id);  // type-stable: safe even if the pool is being removed
  // Seq-cst: pairs with pool_removal_event::try_register.
  if (p.outstanding.fetch_sub(1, std::memory_order_seq_cst) == 1 && p.num_actives.load(std::memory_order_seq_cst) == 0)
    pools_.wake_drain_waiter(p);
  outstanding_.fetch_sub(1, std::memory_order_acq_rel);  // acq_rel: shutdown sees the task's effects
}

// A thread that is not one of our workers (an I/O reactor completing an
// operation, a user thread fulfilling a promise or submitting) may still be
// inside inject when the task it made ready has already run and finished,
// and the runtime is being destroyed: it holds the scheduler in
// foreign_injectors_, which the destructor waits to see at zero. Counted
// before the push, so the task's completion, which shutdown waits for,
// happens after the count (seq-cst both).
class scheduler::foreign_injection {
 public:
  explicit foreign_injection(scheduler& s) noexcept : s_(s.owns(reload_current_worker()) ? nullptr : &s) {
    if (s_ != nullptr) s_->foreign_injectors_.fetch_add(1, std::memory_order_seq_cst);
  }
  ~foreign_injection() {
    if (s_ != nullptr) s_->foreign_injectors_.fetch_sub(1, std::memory_order_seq_cst);
  }
  foreign_injection(const foreign_injection&) = delete;
  foreign_injection& operator=(const foreign_injection&) = delete;

 private:
  scheduler* s_;
};

void scheduler::inject(task* t, bool resumed) noexcept {
  const foreign_injection held(*this);
  const std::uint32_t id = t->pool;
  pool_record& p = pool_at(id);
  if (resumed)
    p.injection.push_resumed(t);
  else
    p.injection.push(t);
  pools_.note_queued(id);  // before the wake-up: a woken worker serving every pool walks the index
  board_.note_nonempty(id);
  if (!sleep_.notify_pool(id)) board_.note_work_without_taker(id);  // a woken worker takes it: nothing to watch
}

void scheduler::make_ready(worker_view* w, task* t, std::uint32_t pool) noexcept {
  // Written only when it changes: a continuation's task (future::then) carries its pool from
  // creation, and a get() of its future may read that field on another thread (to decide
  // whether it may run the task inline) while the antecedent's completion makes it ready here.
  if (t->pool != pool) t->pool = static_cast<decltype(t->pool)>(pool);
  if (tracing_) [[unlikely]] {
    t->trace_parent = 0;  // its spawn is recorded now, with the time it was made ready
    trace_ready(w, trace_kind::spawn, pool, trace_id(t));
  }
  if (owns(w) && w->pool == pool) {
    if (w->deque->try_push(t)) return;  // try_push: a full deque would have to grow (allocate)
  }
  inject(t);
}

void scheduler::inject_batch(task* const* tasks, std::size_t count, std::uint32_t pool) noexcept {
  if (count == 0) return;
  const foreign_injection held(*this);
  for (std::size_t i = 0; i < count; ++i) tasks[i]->pool = pool;
  if (tracing_) [[unlikely]] {
    const worker_view* w = reload_current_worker();
    for (std::size_t i = 0; i < count; ++i) {
      tasks[i]->trace_parent = 0;
      trace_ready(w, trace_kind::spawn, pool, trace_id(tasks[i]));
    }
  }
  pool_at(pool).injection.push_batch(tasks, count);
  pools_.note_queued(pool);
  board_.note_nonempty(pool);
  bool woke = false;
  for (std::size_t i = 0; i < std::min<std::size_t>(count, workers_.size()); ++i) woke = sleep_.notify_pool(pool) || woke;
  if (!woke) board_.note_work_without_taker(pool);
}

// ---- the inline API's entry points (worker_view.hpp) ----

void trace_spawn(worker_view& w, task* t) noexcept {
  t->trace_parent = static_cast<std::uint16_t>(trace_id(worker::of(w).current));
}

void make_ready(scheduler& s, worker_view* w, task* t, unsigned pool) noexcept { s.make_ready(w, t, pool); }
void inject_batch(scheduler& s, task* const* tasks, std::size_t count, unsigned pool) noexcept {
  s.inject_batch(tasks, count, pool);
}
void check_pool(const scheduler& s, unsigned pool) { s.check_pool(pool); }
void admit(scheduler& s, unsigned pool, admission from) { s.admit(pool, from); }
void count_detached_started(scheduler& s, unsigned pool) noexcept { s.count_started(pool); }
void count_detached_finished(scheduler& s, unsigned pool) noexcept { s.count_finished(pool); }

}  // namespace promptly::detail
