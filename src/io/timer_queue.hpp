// The reactor's timers: a binary min-heap of operations ordered by
// (deadline, start order), and one timerfd armed at the earliest deadline.
//
// Both sleeps (timer-only operations) and the deadlines of fd operations
// live here. The heap is indexed: each operation knows its slot, so an
// operation that completes early removes its deadline in O(log n) instead
// of leaving a stale entry behind (which would grow without bound under
// long deadlines and fast completions).
//
// Invariants
//  * mu_ guards heap_, seq_, armed_ and every operation's heap_index.
//  * heap_[i]->heap_index == i; the parent of i is never later than i.
//  * armed_ <= the earliest deadline in the heap, or the heap is empty:
//    the timerfd never sleeps past a deadline (it may fire early, finding
//    nothing expired; that is harmless).
//  * Firing order: expired operations are popped in (deadline, seq) order,
//    so timers fire in deadline order and equal deadlines in start order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "operation.hpp"

namespace promptly::io::detail {

class timer_queue {
 public:
  explicit timer_queue(int timerfd) noexcept : tfd_(timerfd) {}

  // Inserts `op`, which is not in the heap. For an fd operation, the heap
  // takes a reference (operation.hpp).
  void schedule(operation* op);
  // Timer-only operations: inserts `op` unless its stop was requested
  // (checked under mu_, which the stop callback also takes). Returns
  // whether it was inserted.
  bool schedule_unless_cancelled(operation* op);
  // Removes `op` if it is in the heap; returns whether it was. The caller
  // takes over the heap's claim (timer-only) or reference (fd operation).
  bool remove(operation* op) noexcept;
  // Reactor thread: moves every expired operation to `out` in firing
  // order (each keeps its heap claim/reference) and re-arms the timerfd.
  void pop_expired(std::vector<operation*>& out) noexcept;

  std::size_t size() const;

 private:
  bool earlier(const operation* a, const operation* b) const noexcept {
    return a->deadline != b->deadline ? a->deadline < b->deadline : a->timer_seq < b->timer_seq;
  }
  void insert_locked(operation* op);
  void erase_at_locked(std::size_t i) noexcept;
  void sift_up(std::size_t i) noexcept;
  void sift_down(std::size_t i) noexcept;
  void place(std::size_t i, operation* op) noexcept {
    heap_[i] = op;
    op->heap_index = i;
  }
  // Arms the timerfd at `at` if that is earlier than what it is armed for.
  void arm_locked(clock::time_point at) noexcept;

  mutable std::mutex mu_;
  std::vector<operation*> heap_;
  std::uint64_t seq_ = 0;
  clock::time_point armed_ = clock::time_point::max();
  const int tfd_;
};

}  // namespace promptly::io::detail
