// The injection ("master") queue of a pool: work made ready from outside the
// pool's workers (Taskflow's executor, Algorithm 1). Two intrusive FIFOs
// under one mutex, linked through task::next_queued, so pushing never
// allocates and never throws (the wake path of a parked fiber, the I/O
// reactor and submitters all use it):
//  * resumed: resume records of parked fibers, served first: they continue
//    work already started, which keeps parked stacks, and the memory they
//    hold, short-lived;
//  * fresh: new tasks (submissions, tasks spawned at another pool).
//
// Invariants
//  * The low half of state_ equals the number of queued tasks (both lanes)
//    whenever mutex_ is free; it is read seq-cst by a worker about to sleep
//    (the re-check of Algorithm 5 line 11).
//  * The high half counts tasks taken (take) and not yet settled: the taker
//    settles once it is active in the pool (scheduling_loop.cpp). One word,
//    so that remove_pool, reading it (holds_nothing) and then num_actives,
//    sees a taken task in one or the other (pools.cpp); a take costs one
//    RMW more than a queue without it.
//  * A task is in at most one queue; its next_queued is owned by the queue
//    while it is queued.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "promptly/detail/task.hpp"

namespace promptly::detail {

class injection_queue {
 public:
  void push(task* t) noexcept { push_to(fresh_, t); }
  void push_resumed(task* t) noexcept { push_to(resumed_, t); }
  // Pushes `count` tasks in order under one lock.
  void push_batch(task* const* ts, std::size_t count) noexcept {
    if (count == 0) return;
    for (std::size_t i = 0; i + 1 < count; ++i) ts[i]->next_queued = ts[i + 1];
    ts[count - 1]->next_queued = nullptr;
    std::lock_guard lock(mutex_);
    fresh_.append(ts[0], ts[count - 1]);
    state_.fetch_add(count, std::memory_order_seq_cst);  // an RMW: settle_taken does not hold the lock
  }
  // Takes the oldest task (resumed lane first), counted as taken until the
  // caller, once active in the pool, calls settle_taken.
  task* take() noexcept {
    if (empty()) return nullptr;
    std::lock_guard lock(mutex_);
    task* t = resumed_.pop();
    if (t == nullptr) t = fresh_.pop();
    if (t != nullptr) state_.fetch_add(taken_unit - 1, std::memory_order_seq_cst);  // queued -> taken, in one step
    return t;
  }
  void settle_taken() noexcept {
    [[maybe_unused]] const std::uint64_t before = state_.fetch_sub(taken_unit, std::memory_order_seq_cst);
    assert(before >= taken_unit && "a task is settled once, after it was taken");
  }
  bool empty() const noexcept { return (state_.load(std::memory_order_seq_cst) & queued_mask) == 0; }
  // Nothing queued and no taken task unsettled (seq-cst: remove_pool's check).
  bool holds_nothing() const noexcept { return state_.load(std::memory_order_seq_cst) == 0; }
  std::size_t size() const noexcept { return state_.load(std::memory_order_relaxed) & queued_mask; }  // a hint

 private:
  struct fifo {
    task* head = nullptr;
    task* tail = nullptr;
    void append(task* first, task* last) noexcept {
      if (tail != nullptr)
        tail->next_queued = first;
      else
        head = first;
      tail = last;
    }
    task* pop() noexcept {
      task* t = head;
      if (t == nullptr) return nullptr;
      head = t->next_queued;
      if (head == nullptr) tail = nullptr;
      t->next_queued = nullptr;
      return t;
    }
  };
  void push_to(fifo& f, task* t) noexcept {
    t->next_queued = nullptr;
    std::lock_guard lock(mutex_);
    f.append(t, t);
    state_.fetch_add(1, std::memory_order_seq_cst);
  }

  static constexpr std::uint64_t taken_unit = std::uint64_t{1} << 32;
  static constexpr std::uint64_t queued_mask = taken_unit - 1;

  std::mutex mutex_;
  fifo resumed_;
  fifo fresh_;
  std::atomic<std::uint64_t> state_{0};  // queued tasks (low half), taken and unsettled (high half)
};

}  // namespace promptly::detail
