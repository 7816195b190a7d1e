// A level's pool (DESIGN.md, "Pool"): its injection queue, its muggable
// deques (left with work by workers that moved to another level), the
// seed 002 counters of the workers serving it, and a store of spare deques.
//
// Invariants
//  * A deque is in at most one place: owned by one worker (worker::own),
//    in `muggable` (non-empty, unowned), or in `spare` (empty, unowned).
//  * muggable_count == muggable.size() whenever mutex is free; read
//    seq-cst by a worker about to sleep.
//  * A worker takes a muggable deque whole (seed 001 Sec. 3.5) before it
//    steals; thieves never probe a deque that is neither owned by a worker
//    serving the level nor muggable.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "injection_queue.hpp"
#include "promptly/detail/worker_view.hpp"

namespace promptly::detail {

struct level_pool {
  injection_queue injection;
  std::mutex mutex;
  std::vector<task_deque*> muggable;
  std::vector<task_deque*> spare;
  std::atomic<unsigned> muggable_count{0};
  alignas(64) std::atomic<int> num_actives{0};
  alignas(64) std::atomic<int> num_thieves{0};
  std::atomic<bool> believed_nonempty{false};  // what the policy was last told

  bool has_queued_work() const noexcept {
    return !injection.empty() || muggable_count.load(std::memory_order_seq_cst) != 0;
  }
  bool has_ready_work() const noexcept { return has_queued_work() || num_actives.load(std::memory_order_seq_cst) > 0; }

  void give_muggable(task_deque* d) {
    std::lock_guard lock(mutex);
    muggable.push_back(d);
    muggable_count.store(static_cast<unsigned>(muggable.size()), std::memory_order_seq_cst);
  }
  // Takes a non-empty muggable deque whole. Deques that thieves emptied
  // meanwhile go to `spare`, so that an empty level looks empty.
  task_deque* take_muggable() {
    if (muggable_count.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(mutex);
    task_deque* found = nullptr;
    while (found == nullptr && !muggable.empty()) {
      task_deque* d = muggable.back();
      muggable.pop_back();
      if (d->empty())
        spare.push_back(d);
      else
        found = d;
    }
    muggable_count.store(static_cast<unsigned>(muggable.size()), std::memory_order_seq_cst);
    return found;
  }
  // Steals one task from some muggable deque without taking the deque (for
  // roaming workers and thieves of the level); drops emptied deques.
  task* steal_muggable() {
    if (muggable_count.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(mutex);
    task* t = nullptr;
    for (std::size_t i = 0; i < muggable.size() && t == nullptr;) {
      t = muggable[i]->steal();
      if (t == nullptr && muggable[i]->empty()) {
        spare.push_back(muggable[i]);
        muggable[i] = muggable.back();
        muggable.pop_back();
      } else {
        ++i;
      }
    }
    muggable_count.store(static_cast<unsigned>(muggable.size()), std::memory_order_seq_cst);
    return t;
  }
  task_deque* take_spare() {
    std::lock_guard lock(mutex);
    if (spare.empty()) return nullptr;
    task_deque* d = spare.back();
    spare.pop_back();
    return d;
  }
  void give_spare(task_deque* d) {
    std::lock_guard lock(mutex);
    spare.push_back(d);
  }
};

}  // namespace promptly::detail
