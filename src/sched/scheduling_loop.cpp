// The worker's scheduling loop and the adaptive sleep protocol of
// Taskflow's executor ("An Efficient Work-Stealing Scheduler for Task
// Dependency Graph", Algorithms 2-5), per pool, with one deliberate change
// (the bounded nap of the last thief; README.md in this folder explains it
// and restates Lemma 1 per pool), plus the moves of I-Cilk (Sec. 5): a
// worker whose assignment changed leaves its pool at a strand boundary
// (pool_moves.cpp), and workers arriving at a pool mug deques left there
// (AMCilk, Sec. 3.5) before they steal.
//
// Invariants (asserted in the Debug build)
//  * Work keeps its pool: a worker runs a task only while serving the
//    task's pool (w.pool == t->pool).
//  * Lemma 1 per pool, across moves: a thief that stops being a thief of
//    pool P without sleeping (it found work, or the policy moved it, or the
//    mode changed) and was P's last thief while P has active workers wakes
//    a waiting worker of P (README.md, "Lemma 1 across moves").
//  * A wait sees one mode: wait_for_task takes one snapshot of roaming_ and
//    leaves as soon as the live mode differs, so the explore path, the
//    sleep condition and the counters it touches all agree.
#include <sched.h>

#include <cassert>

#include "chaos.hpp"
#include "scheduler.hpp"

namespace promptly::detail {
namespace {
// Returned by find_work when the scheduler stops.
task stop_marker{nullptr};
}  // namespace

// Algorithm 2 (worker_loop) fused with Algorithm 3 (exploit_task). Runs on
// whichever fiber currently carries the worker; after any task the fiber
// may be on another worker, so the worker is re-read every iteration.
void scheduler::run_scheduling_loop() {
  for (;;) {
    worker& w = worker::of(*reload_current_worker());
    // The loop top is a strand boundary with nothing on the stack: the one
    // place besides the policy thread where a decision may run (a pool became
    // non-empty and the policy thread has not decided yet: a busy worker
    // decides now rather than wait for that thread to get a core).
    // Acquire: pairs with the release that set decide_request, so the
    // event bits it announces are visible below.
    if (unsigned word = w.assigned.load(std::memory_order_acquire); word != no_pool && (word & decide_request))
      [[unlikely]] w.assigned.compare_exchange_strong(word, word & ~decide_request, std::memory_order_relaxed);  // a new assignment clears it anyway
    if (became_nonempty_.any() || w.decide_pending) [[unlikely]] {
      w.decide_pending = false;
      decide_at_loop_top();
    }
    const unsigned target = assigned_pool(w.assigned.load(std::memory_order_acquire));
    // A roaming core follows its work, but sleeps when told (a core limit).
    // Under a steal-boundary policy a core leaves only once out of local work.
    if ((target == no_pool || (target != w.pool && !roaming_.load(std::memory_order_relaxed))) &&
        (!switches_when_out_of_work() || (w.continuation == nullptr && w.deque->empty()))) {
      become_inactive(w);
      if (target == no_pool) {
        leave_pool(w);  // hand over what the deque holds before sleeping
        sleep_unassigned(w);
        if (stopping_.load(std::memory_order_acquire)) return;
        continue;
      }
      move_to_pool(w, target);
      if (const std::uint64_t asked = w.reassigned_ns.exchange(0, std::memory_order_relaxed); asked != 0)  // relaxed: a statistic
        w.samples.record(mechanism_op::realloc, elapsed_since(asked));
    }
    task* t = w.continuation;  // Taskflow: the cached successor runs first
    if (t != nullptr)
      w.continuation = nullptr;
    else
      t = w.deque->pop();
    if (t == nullptr) {
      become_inactive(w);
      t = cfg_.sleep == sleep_mode::adaptive ? find_work(w) : wait_never_sleeping(w);
      if (t == &stop_marker) return;
      if (t == nullptr) continue;  // reassigned: the loop top moves the worker
      if (t->pool != w.pool) move_to_pool(w, t->pool);  // a roaming worker found work elsewhere
      become_active(w);
    }
    assert(t->pool == w.pool && w.at == &pool_at(w.pool) && "a worker runs only tasks of the pool it serves");
    w.at->tasks.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    trace(w, trace_kind::task_start, t->pool, trace_id(w.current));
    t->execute(t);
    // The task may have parked and ended on another worker, and this frame
    // may be an idle fiber's coming back: trace the fiber it returned on
    // (the reload only when tracing: it is not free, and this runs per task).
    if (tracing_) [[unlikely]] {
      worker& ended = worker::of(*reload_current_worker());
      trace(ended, trace_kind::task_end, ended.pool, trace_id(ended.current));
    }
  }
}

// In roaming mode all workers form one sleep domain: pool 0's counters.

std::uint64_t scheduler::elapsed_since(std::uint64_t start_ns) noexcept {
  const std::uint64_t now = now_ns();
  return now > start_ns ? now - start_ns : 0;
}

void scheduler::record_wake(worker& w, std::uint64_t wake_ns) noexcept {
  if (wake_ns != 0) w.samples.record(mechanism_op::wake, wake_ns);
}

void scheduler::set_phase(worker& w, worker_phase p) noexcept {
  const std::uint64_t now = now_ns();
  const std::uint64_t since = w.phase_since_ns.load(std::memory_order_relaxed);
  const bool working = w.phase.load(std::memory_order_relaxed) == worker_phase::working;
  // Relaxed: statistics. The pool's accounts are shared by its workers (an
  // add per phase change, not per task); the core's are the worker's own.
  (working ? w.at->work_ns : w.at->look_ns).fetch_add(now - since, std::memory_order_relaxed);
  auto& mine = working ? w.work_ns : w.look_ns;
  mine.store(mine.load(std::memory_order_relaxed) + (now - since), std::memory_order_relaxed);
  w.phase_since_ns.store(now, std::memory_order_relaxed);
  w.phase.store(p, std::memory_order_relaxed);
}

// Algorithm 3, lines 2-3: the first active worker of a pool makes sure a
// thief of that pool exists.
void scheduler::become_active(worker& w) noexcept {
  if (w.active) return;
  w.active = true;
  set_phase(w, worker_phase::working);
  const bool roaming = roaming_.load(std::memory_order_relaxed);
  pool_record& p = roaming ? pool_at(0) : *w.at;
  w.active_domain = &p;
  if (p.num_actives.fetch_add(1, std::memory_order_seq_cst) == 0 && cfg_.sleep == sleep_mode::adaptive &&
      p.num_thieves.load(std::memory_order_seq_cst) == 0)
    notify_pool(p.id);
  // A decision that read the pool between our taking the task and the
  // increment above saw it empty (nothing queued, nobody active). Seq-cst
  // after the increment: either that decision's re-check saw us, or we see
  // the belief it stored and report the pool (policy_driver.cpp).
  if (!roaming && !p.believed_nonempty.load(std::memory_order_seq_cst)) note_nonempty(p.id);
  chaos::point();
}

// Algorithm 3, line 13.
void scheduler::become_inactive(worker& w) noexcept {
  if (!w.active) return;
  w.active = false;
  set_phase(w, worker_phase::looking);
  const int before = w.active_domain->num_actives.fetch_sub(1, std::memory_order_seq_cst);
  assert(before > 0 && "num_actives never goes negative");
  (void)before;
}

void scheduler::block_worker(worker& w, publish_fn publish, void* event) {
  blocked_waits_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
  const bool was_active = w.active;
  become_inactive(w);
  pool_record& p = *w.at;  // same thread, same worker throughout: no fiber switch happens
  p.parked.fetch_add(1, std::memory_order_seq_cst);  // seq-cst: as parking (parking.cpp)
  note_maybe_empty(w.pool);
  block_current_thread(publish, event);
  p.parked.fetch_sub(1, std::memory_order_seq_cst);
  if (was_active) become_active(w);
}

// Wakes one waiting worker assigned to `pool` (any roaming worker when
// roaming; never one the policy put to sleep).
void scheduler::notify_pool(std::uint32_t pool) noexcept {
  notifier::fence_before_notify();
  const bool roaming = roaming_.load(std::memory_order_relaxed);
  const std::size_t n = workers_.size();
  static thread_local unsigned rotor = 0;
  const unsigned start = rotor++;
  for (std::size_t k = 0; k < n; ++k) {
    worker& v = *workers_[(start + k) % n];
    const unsigned a = assigned_pool(v.assigned.load(std::memory_order_seq_cst));
    if ((roaming ? a != no_pool : a == pool) && notifier::notify(v.slot)) return;
  }
}

// True when the wait that took the snapshot `roaming` must end: the mode
// changed, the policy moved the worker, or a pool became non-empty and no
// decision has been taken yet (the worker takes it at its loop top rather
// than wait for the policy thread to get a core; ending a wait early is
// always safe, the worker comes back).
bool scheduler::moved(const worker& w, bool roaming) const noexcept {
  if (became_nonempty_.any()) return true;
  if (roaming_.load(std::memory_order_seq_cst) != roaming) return true;
  const unsigned word = w.assigned.load(std::memory_order_seq_cst);
  return roaming ? word == no_pool : word != w.pool;
}

// One steal attempt (Algorithm 4, lines 4-9): a random victim serving the
// same pool, or, when the victim is the thief itself, the pool's injection
// queue and muggable deques. Roaming workers take from any pool.
task* scheduler::steal_once(worker& w, bool roaming) {
  const unsigned n = worker_count();
  const unsigned v = w.next_random(n);
  if (roaming) {
    if (v != w.index) return workers_[v]->visible.load(std::memory_order_acquire)->steal();
    const std::uint32_t end = pool_id_end_.load(std::memory_order_acquire);
    const std::uint32_t start = w.next_random(end);
    for (std::uint32_t k = 0; k < end; ++k) {
      pool_record& p = pool_at((start + k) % end);
      if (p.phase.load(std::memory_order_relaxed) == pool_phase::free) continue;  // relaxed: a hint; queues are checked
      if (task* t = p.injection.pop()) return t;
      if (task* t = p.steal_muggable()) return t;
    }
    return nullptr;
  }
  pool_record& p = *w.at;
  if (v == w.index) {
    if (task* t = p.injection.pop()) return t;
    return p.steal_muggable();
  }
  worker& victim = *workers_[v];
  if (victim.serving.load(std::memory_order_acquire) != w.pool) return nullptr;  // never probe other pools' deques
  task* t = victim.visible.load(std::memory_order_acquire)->steal();
  if (t != nullptr && t->pool != w.pool) {
    inject(t);  // the victim moved between our two reads: hand the task to its pool
    return nullptr;
  }
  return t;
}

// Algorithm 4: random stealing. After steal_bound failures the thief yields
// before each attempt, and gives up after yield_bound yields.
task* scheduler::explore_task(worker& w, bool roaming) {
  unsigned failed = 0;
  unsigned yields = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (moved(w, roaming)) return nullptr;
    const std::uint64_t start = now_ns();
    if (task* t = steal_once(w, roaming)) {
      w.samples.record(mechanism_op::steal, elapsed_since(start));
      trace(w, trace_kind::steal, t->pool);
      return t;
    }
    if (++failed >= cfg_.steal_bound) {
      sched_yield();
      if (++yields >= cfg_.yield_bound) break;
    }
  }
  return nullptr;
}

// Mugging first (AMCilk, Sec. 3.5): a deque left with work at this pool is
// taken whole, then Algorithm 5.
task* scheduler::find_work(worker& w) {
  if (!roaming_.load(std::memory_order_relaxed)) {
    // Reassigned (under a steal-boundary policy, or since the loop top): out
    // of local work now, so the loop top moves it; it must not mug its old
    // pool first.
    if (w.assigned.load(std::memory_order_relaxed) != w.pool) return nullptr;
    const std::uint64_t start = now_ns();
    while (task_deque* m = w.at->take_muggable()) {
      adopt_deque(w, m);
      if (task* t = m->pop()) {
        w.samples.record(mechanism_op::mug, elapsed_since(start));
        trace(w, trace_kind::mug, w.pool);
        return t;
      }
    }
  }
  return wait_for_task(w);
}

// Algorithm 5 at the worker's pool. Returns a task, nullptr when the
// policy moved the worker or the mode changed, or &stop_marker when the
// scheduler stops.
task* scheduler::wait_for_task(worker& w) {
  const bool roaming = roaming_.load(std::memory_order_seq_cst);
  pool_record& p = roaming ? pool_at(0) : *w.at;
  const std::uint32_t d = p.id;
  auto queued = [&] {
    if (!roaming) return p.has_queued_work();
    const std::uint32_t end = pool_id_end_.load(std::memory_order_seq_cst);
    for (std::uint32_t id = 0; id < end; ++id)
      if (pool_at(id).has_queued_work()) return true;
    return false;
  };
  // Stops being a thief without sleeping (lines 16-17). Lemma 1 per pool:
  // the last thief of a pool with active workers hands the role on, both
  // when it found work (the paper) and when it leaves the pool (a move).
  auto stop_thieving = [&](bool found) {
    const int before = p.num_thieves.fetch_sub(1, std::memory_order_seq_cst);
    assert(before > 0 && "num_thieves never goes negative");
    if (before == 1 && (found || p.num_actives.load(std::memory_order_seq_cst) > 0))
      notify_pool(d);
    else if (!found && p.has_queued_work())
      notify_pool(d);  // a wake-up aimed at us may have been for that work
  };
  for (;;) {
    p.num_thieves.fetch_add(1, std::memory_order_seq_cst);  // line 2
    chaos::point();
    task* found = nullptr;
    for (;;) {
      found = explore_task(w, roaming);  // lines 4-8
      if (found != nullptr || moved(w, roaming)) break;
      notifier::prepare_wait(w.slot);  // line 10
      chaos::point();
      if (queued()) {                  // line 11: condition #1
        notifier::cancel_wait(w.slot);
        found = steal_once(w, roaming);
        if (found != nullptr) break;
        continue;  // line 20: explore again
      }
      break;
    }
    // Line 23, condition #2, checked before a move: once stopping, no policy
    // decides any more, so an event posted late (a foreign thread's wake-up
    // during shutdown) would keep `moved` true and the worker would go
    // round its loop forever instead of stopping.
    if (found == nullptr && stopping_.load(std::memory_order_seq_cst)) {
      notifier::cancel_wait(w.slot);
      p.num_thieves.fetch_sub(1, std::memory_order_seq_cst);
      return &stop_marker;
    }
    if (found != nullptr || moved(w, roaming)) {
      notifier::cancel_wait(w.slot);
      stop_thieving(found != nullptr);
      return found;
    }
    // Line 29: condition #3. The last thief must not leave active workers
    // of its pool without a thief. The paper re-explores at once; we nap
    // for at most sentinel_nap (README.md, "Lemma 1 with a bounded nap").
    if (p.num_thieves.fetch_sub(1, std::memory_order_seq_cst) == 1 && p.num_actives.load(std::memory_order_seq_cst) > 0) {
      chaos::point();
      trace(w, trace_kind::sleep, d, 1);  // arg 1: a bounded nap
      record_wake(w, notifier::commit_wait(w.slot, cfg_.sentinel_nap));
      trace(w, trace_kind::wake, d);
      continue;
    }
    // Nobody works at this pool any more: it may have become empty, which
    // the policy hears about (it may move this worker). This worker is idle,
    // so it decides itself at its loop top instead of waking the policy
    // thread, which on a machine whose cores all run workers preempts one.
    if (!roaming && note_maybe_empty(d, decider::poster)) {
      notifier::cancel_wait(w.slot);
      w.decide_pending = true;
      return nullptr;
    }
    chaos::point();
    if (moved(w, roaming)) {
      notifier::cancel_wait(w.slot);
      return nullptr;
    }
    trace(w, trace_kind::sleep, d);
    record_wake(w, notifier::commit_wait(w.slot));  // line 33
    trace(w, trace_kind::wake, d);
  }
}

// The ABP-style baseline (Taskflow executor paper, Sec. III): never sleep, yield after every
// failed steal.
task* scheduler::wait_never_sleeping(worker& w) {
  const bool roaming = roaming_.load(std::memory_order_seq_cst);
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (moved(w, roaming)) return nullptr;
    if (task* t = steal_once(w, roaming)) return t;
    sched_yield();
  }
  return &stop_marker;
}

// A worker the policy gave to no pool sleeps until it gets one.
void scheduler::sleep_unassigned(worker& w) {
  for (;;) {
    if (stopping_.load(std::memory_order_acquire) || w.assigned.load(std::memory_order_seq_cst) != no_pool) return;
    notifier::prepare_wait(w.slot);
    chaos::point();
    if (stopping_.load(std::memory_order_seq_cst) || w.assigned.load(std::memory_order_seq_cst) != no_pool) {
      notifier::cancel_wait(w.slot);
      return;
    }
    if (const std::uint64_t asked = w.reassigned_ns.exchange(0, std::memory_order_relaxed); asked != 0)  // relaxed: a statistic
      w.samples.record(mechanism_op::sleep, elapsed_since(asked));
    trace(w, trace_kind::sleep, no_pool);
    record_wake(w, notifier::commit_wait(w.slot));
    trace(w, trace_kind::wake, no_pool);
  }
}

}  // namespace promptly::detail
