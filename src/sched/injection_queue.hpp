// The injection ("master") queue: work that arrives from outside the
// workers (seed 002, Algorithm 1). A mutex-protected FIFO; an atomic size
// lets thieves skip the lock when it is empty.
//
// Invariant: size_ equals the number of queued tasks whenever mutex_ is
// free; it is read seq-cst by a worker about to sleep (the re-check of
// Algorithm 5 line 11).
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>

#include "promptly/detail/task.hpp"

namespace promptly::detail {

class injection_queue {
 public:
  void push(task* t) {
    std::lock_guard lock(mutex_);
    tasks_.push_back(t);
    size_.store(tasks_.size(), std::memory_order_seq_cst);
  }
  void push_batch(task* const* ts, std::size_t count) {
    std::lock_guard lock(mutex_);
    tasks_.insert(tasks_.end(), ts, ts + count);
    size_.store(tasks_.size(), std::memory_order_seq_cst);
  }
  task* pop() {
    if (empty()) return nullptr;
    std::lock_guard lock(mutex_);
    if (tasks_.empty()) return nullptr;
    task* t = tasks_.front();
    tasks_.pop_front();
    size_.store(tasks_.size(), std::memory_order_seq_cst);
    return t;
  }
  bool empty() const noexcept { return size_.load(std::memory_order_seq_cst) == 0; }

 private:
  std::mutex mutex_;
  std::deque<task*> tasks_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace promptly::detail
