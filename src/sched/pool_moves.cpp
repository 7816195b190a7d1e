// A worker leaving the pool it serves and arriving at another (I-Cilk,
// Sec. 5: workers switch priority at strand boundaries), and the deques it
// owns per pool.
//
// Invariants (asserted in the Debug build)
//  * Work keeps its pool: a worker leaving a pool pushes its cached graph
//    continuation back on that pool's deque, and a non-empty deque becomes
//    muggable (AMCilk, Sec. 3.5) and the pool is reported non-empty; the
//    worker keeps an empty deque, so it can come back without a move.
//  * w.deque == own_deque(w, *w.at) and w.visible == w.deque whenever the
//    worker runs a task.
#include <cassert>

#include "chaos.hpp"
#include "scheduler.hpp"

namespace promptly::detail {

task_deque* scheduler::new_deque() {
  std::lock_guard lock(deques_mutex_);
  deques_.push_back(std::make_unique<task_deque>());
  return deques_.back().get();
}

task_deque* scheduler::own_deque(worker& w, pool_record& p) {
  task_deque*& d = p.own[w.index];
  if (d == nullptr) {
    d = p.take_spare();
    if (d == nullptr) d = new_deque();
  }
  return d;
}

void scheduler::adopt_deque(worker& w, task_deque* d) {
  pool_record& p = *w.at;
  task_deque* mine = p.own[w.index];
  if (mine != nullptr) p.give_spare(mine);  // empty: the caller found nothing in it
  p.own[w.index] = d;
  w.deque = d;
  w.visible.store(d, std::memory_order_release);
}

// Leaves the pool the worker serves, at a strand boundary with no task on
// the stack. The worker still serves the pool until arrive_at_pool.
void scheduler::leave_pool(worker& w) {
  set_phase(w, w.phase.load(std::memory_order_relaxed));  // close the interval at the old pool
  pool_record& p = *w.at;
  task_deque* d = p.own[w.index];
  assert(d == w.deque && "the worker's deque is its own deque of the pool it serves");
  if (w.continuation != nullptr) {  // work keeps its pool
    d->push(w.continuation);
    w.continuation = nullptr;
  }
  const bool left_work = !d->empty();
  if (left_work) {
    task_deque* fresh = p.take_spare();
    if (fresh == nullptr) fresh = new_deque();
    p.give_muggable(d);
    // A thief that read w.visible before the store below may still steal
    // from d, now muggable, and empty it there (pool.hpp says who drops
    // it); tests make that happen on purpose (chaos.hpp).
    if (chaos::steal_at_hand_over()) [[unlikely]]
      while (task* t = d->steal()) inject(t);
    chaos::point();
    p.own[w.index] = fresh;
    w.deque = fresh;
    w.visible.store(fresh, std::memory_order_release);
  }
  chaos::point();
  if (left_work) {
    note_nonempty(p.id);
    sleep_.notify_pool(p.id);  // a sleeping worker of the old pool can mug it
  } else {
    note_maybe_empty(p.id);
  }
}

void scheduler::arrive_at_pool(worker& w, std::uint32_t target) {
  pool_record& p = pool_at(target);
  w.pool = target;
  w.at = &p;
  w.serving.store(target, std::memory_order_release);
  w.deque = own_deque(w, p);
  w.visible.store(w.deque, std::memory_order_release);
  refresh_boundary_word(w);
  p.switches_in.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
  trace(w, trace_kind::move, target);
}

void scheduler::move_to_pool(worker& w, std::uint32_t target) {
  leave_pool(w);
  arrive_at_pool(w, target);
}

}  // namespace promptly::detail
