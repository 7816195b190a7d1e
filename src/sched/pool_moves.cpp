// A worker leaving the pool it serves and arriving at another, and the
// deques it owns per pool (pool_moves.hpp states the invariants); the
// worker loop's side of a move (accounts, events, wake-ups, the trace).
#include <cassert>

#include "chaos.hpp"
#include "pool_moves.hpp"
#include "scheduler.hpp"
#include "scheduling_loop.hpp"

namespace promptly::detail {

task_deque* pool_moves::new_deque() {
  std::lock_guard lock(deques_mutex_);
  deques_.push_back(std::make_unique<task_deque>());
  return deques_.back().get();
}

task_deque* pool_moves::own_deque(worker& w, pool_record& p) {
  task_deque*& d = p.own[w.index];
  if (d == nullptr) {
    d = p.take_spare();
    if (d == nullptr) d = new_deque();
  }
  return d;
}

void pool_moves::adopt_deque(worker& w, task_deque* d) {
  pool_record& p = *w.at;
  task_deque* mine = p.own[w.index];
  if (mine != nullptr) p.give_spare(mine);  // empty: the caller found nothing in it
  p.own[w.index] = d;
  w.deque = d;
  w.visible.store(d, std::memory_order_release);
}

template <class HandOver>
bool pool_moves::leave(worker& w, HandOver&& hand_over) {
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
      while (task* t = d->steal()) hand_over(t);
    chaos::point();
    p.own[w.index] = fresh;
    w.deque = fresh;
    w.visible.store(fresh, std::memory_order_release);
  }
  chaos::point();
  return left_work;
}

void pool_moves::arrive(worker& w, pool_record& p) {
  w.pool = p.id;
  w.at = &p;
  w.serving.store(p.id, std::memory_order_release);
  w.deque = own_deque(w, p);
  w.visible.store(w.deque, std::memory_order_release);
  p.switches_in.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
}

// The worker leaves its pool: the interval it spent there is closed, and
// the policy hears whether the pool kept work (a waiting worker of it can
// mug the deque left there) or may have become empty.
void worker_loop::leave_pool(worker& w) {
  set_phase(w, w.phase.load(std::memory_order_relaxed));  // close the interval at the old pool
  pool_record& p = *w.at;
  if (moves_.leave(w, [this](task* t) { sched_.inject(t); })) {
    pools_.note_queued(p.id);  // the deque left there is muggable: queued work
    board_.note_nonempty(p.id);
    sleep_.notify_pool(p.id);  // a sleeping worker of the old pool can mug it
  } else {
    board_.note_maybe_empty(p.id);
  }
}

void worker_loop::arrive_at_pool(worker& w, std::uint32_t target) {
  moves_.arrive(w, pools_.at(target));
  refresh_boundary_word(w);
  trace(w, trace_kind::move, target);
}

void worker_loop::move_to_pool(worker& w, std::uint32_t target) {
  leave_pool(w);
  arrive_at_pool(w, target);
}

}  // namespace promptly::detail
