// A worker leaving the pool it serves and arriving at another (I-Cilk,
// Sec. 5: workers switch priority at strand boundaries), and the deques it
// owns per pool. The scheduler calls in (the loop top, mugging, the
// constructor) and tells the policy what a move left behind; nothing here
// calls back, so a move is one step along submit -> ready -> run.
//
// Invariants (asserted in the Debug build)
//  * Work keeps its pool: a worker leaving a pool pushes its cached graph
//    continuation back on that pool's deque, and a non-empty deque becomes
//    muggable (AMCilk, Sec. 3.5); the worker keeps an empty deque, so it
//    can come back without a move.
//  * w.deque == own_deque(w, *w.at) and w.visible == w.deque whenever the
//    worker runs a task.
//  * Deques are type-stable: every deque made lives as long as the
//    scheduler (a thief may still hold one it read from `visible`).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "pool.hpp"
#include "worker.hpp"

namespace promptly::detail {

class pool_moves {
 public:
  pool_moves() = default;
  pool_moves(const pool_moves&) = delete;
  pool_moves& operator=(const pool_moves&) = delete;

  // w's deque of pool p, made (or taken from p's spares) on first use.
  task_deque* own_deque(worker& w, pool_record& p);
  // w, serving its pool, takes deque d (mugged there) as its own.
  void adopt_deque(worker& w, task_deque* d);
  // Leaves the pool w serves, at a strand boundary with no task on the
  // stack; w still serves it until arrive. Returns true if w left work
  // there (its deque became muggable). `hand_over` takes a task a test's
  // chaos steals from the deque while it is handed over (chaos.hpp).
  template <class HandOver>
  bool leave(worker& w, HandOver&& hand_over);
  // Serves pool p from now on (w left its pool).
  void arrive(worker& w, pool_record& p);

 private:
  task_deque* new_deque();
  std::mutex deques_mutex_;
  std::vector<std::unique_ptr<task_deque>> deques_;  // owns every deque
};

}  // namespace promptly::detail
