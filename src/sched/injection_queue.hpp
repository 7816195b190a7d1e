// The injection ("master") queue: work that arrives from outside the
// workers (seed 002, Algorithm 1). Two lanes under one mutex:
//  * tasks submitted by user code (a FIFO that may allocate: its callers,
//    rt.submit and friends, may throw bad_alloc to their caller), and
//  * linked tasks, records that carry their own link (a parked fiber's
//    resume task): pushing one never allocates, so the noexcept wake path
//    (a future completing, an I/O reactor waking a fiber) cannot fail.
// pop() serves the linked lane first: it resumes work already started,
// which keeps parked stacks, and the memory they hold, short-lived.
//
// Invariants
//  * size_ equals the number of queued tasks (both lanes) whenever mutex_
//    is free; it is read seq-cst by a worker about to sleep (the re-check of
//    Algorithm 5 line 11).
//  * A linked task is in at most one queue; its `next_queued` is owned by
//    the queue while it is queued.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>

#include "promptly/detail/task.hpp"

namespace promptly::detail {

struct linked_task : task {
  using task::task;
  linked_task* next_queued = nullptr;
};

class injection_queue {
 public:
  void push(task* t) {
    std::lock_guard lock(mutex_);
    tasks_.push_back(t);
    size_.store(size_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  }
  void push_batch(task* const* ts, std::size_t count) {
    std::lock_guard lock(mutex_);
    tasks_.insert(tasks_.end(), ts, ts + count);
    size_.store(size_.load(std::memory_order_relaxed) + count, std::memory_order_seq_cst);
  }
  // Never allocates.
  void push_linked(linked_task* t) noexcept {
    std::lock_guard lock(mutex_);
    t->next_queued = nullptr;
    if (linked_tail_ != nullptr)
      linked_tail_->next_queued = t;
    else
      linked_head_ = t;
    linked_tail_ = t;
    size_.store(size_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  }
  task* pop() noexcept {
    if (empty()) return nullptr;
    std::lock_guard lock(mutex_);
    task* t = nullptr;
    if (linked_head_ != nullptr) {
      linked_task* l = linked_head_;
      linked_head_ = l->next_queued;
      if (linked_head_ == nullptr) linked_tail_ = nullptr;
      t = l;
    } else if (!tasks_.empty()) {
      t = tasks_.front();
      tasks_.pop_front();  // never allocates
    } else {
      return nullptr;
    }
    size_.store(size_.load(std::memory_order_relaxed) - 1, std::memory_order_seq_cst);
    return t;
  }
  bool empty() const noexcept { return size_.load(std::memory_order_seq_cst) == 0; }

 private:
  std::mutex mutex_;
  std::deque<task*> tasks_;
  linked_task* linked_head_ = nullptr;
  linked_task* linked_tail_ = nullptr;
  std::atomic<std::size_t> size_{0};
};

}  // namespace promptly::detail
