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
//  * size_ equals the number of queued tasks (both lanes) whenever mutex_
//    is free; it is read seq-cst by a worker about to sleep (the re-check of
//    Algorithm 5 line 11).
//  * A task is in at most one queue; its next_queued is owned by the queue
//    while it is queued.
#pragma once

#include <atomic>
#include <cstddef>
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
    size_.store(size_.load(std::memory_order_relaxed) + count, std::memory_order_seq_cst);
  }
  task* pop() noexcept {
    if (empty()) return nullptr;
    std::lock_guard lock(mutex_);
    task* t = resumed_.pop();
    if (t == nullptr) t = fresh_.pop();
    if (t != nullptr) size_.store(size_.load(std::memory_order_relaxed) - 1, std::memory_order_seq_cst);
    return t;
  }
  bool empty() const noexcept { return size_.load(std::memory_order_seq_cst) == 0; }
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }  // a hint

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
    size_.store(size_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  }

  std::mutex mutex_;
  fifo resumed_;
  fifo fresh_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace promptly::detail
