// The timer heap and its timerfd (timer_queue.hpp).
#include "timer_queue.hpp"

#include <sys/timerfd.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <ctime>

namespace promptly::io::detail {

void timer_queue::schedule(operation* op) {
  std::lock_guard lock(mu_);
  // The heap's reference. Relaxed: the caller's claim keeps the record alive.
  if (op->fd != nullptr) op->refs.fetch_add(1, std::memory_order_relaxed);
  insert_locked(op);
}

bool timer_queue::schedule_unless_cancelled(operation* op) {
  std::lock_guard lock(mu_);
  // The stop callback sets the flag before it takes mu_: either we see it
  // here, or the callback finds the operation in the heap. Acquire pairs
  // with the callback's release store.
  if (op->cancel_requested.load(std::memory_order_acquire)) return false;
  insert_locked(op);
  return true;
}

bool timer_queue::remove(operation* op) noexcept {
  std::lock_guard lock(mu_);
  if (op->heap_index == operation::not_in_heap) return false;
  erase_at_locked(op->heap_index);
  return true;
}

void timer_queue::pop_expired(std::vector<operation*>& out) noexcept {
  std::lock_guard lock(mu_);
  const auto now = clock::now();
  try {
    while (!heap_.empty() && heap_.front()->deadline <= now) {
      out.push_back(heap_.front());  // first: if it throws, the entry stays
      erase_at_locked(0);
    }
  } catch (...) {
    // Out of memory: what is left fires on the next (immediate) expiry.
  }
  // The timerfd fired (or fired early): arm it afresh for what is left.
  armed_ = clock::time_point::max();
  if (!heap_.empty()) arm_locked(heap_.front()->deadline);
}

std::size_t timer_queue::size() const {
  std::lock_guard lock(mu_);
  return heap_.size();
}

void timer_queue::insert_locked(operation* op) {
  assert(op->heap_index == operation::not_in_heap && "an operation is in the heap at most once");
  op->timer_seq = seq_++;
  heap_.push_back(op);  // may throw bad_alloc before anything changed
  op->heap_index = heap_.size() - 1;
  sift_up(op->heap_index);
  if (heap_.front() == op) arm_locked(op->deadline);
}

void timer_queue::erase_at_locked(std::size_t i) noexcept {
  operation* gone = heap_[i];
  operation* last = heap_.back();
  heap_.pop_back();
  gone->heap_index = operation::not_in_heap;
  if (i == heap_.size()) return;  // it was the last slot
  place(i, last);
  sift_up(i);
  sift_down(last->heap_index);
}

void timer_queue::sift_up(std::size_t i) noexcept {
  operation* op = heap_[i];
  while (i > 0) {
    std::size_t parent = (i - 1) / 2;
    if (!earlier(op, heap_[parent])) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, op);
}

void timer_queue::sift_down(std::size_t i) noexcept {
  operation* op = heap_[i];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && earlier(heap_[child + 1], heap_[child])) ++child;
    if (!earlier(heap_[child], op)) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, op);
}

void timer_queue::arm_locked(clock::time_point at) noexcept {
  if (at >= armed_) return;  // already armed at least as early
  armed_ = at;
  // steady_clock is CLOCK_MONOTONIC in libstdc++, so its epoch is the
  // timerfd's. An all-zero it_value would disarm: use at least 1 ns.
  const auto since_boot = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch());
  const std::int64_t ns = std::max<std::int64_t>(1, since_boot.count());
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  ::timerfd_settime(tfd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

}  // namespace promptly::io::detail
