// future_cell<T>: an atomic slot that holds "no future yet" or a handle to a
// future, so tasks can publish and discover each other's handles through
// shared data ("Responsive Parallelism with Futures and State", PLDI 2020,
// Sec. 2.2 and 5.1: futures in mutable state; the email client's print and
// compress tasks coordinate through a CAS on an array slot). promptly::typed::future_cell<T, Q> is the same cell for typed
// futures.
//
//   promptly::future_cell<int> slot;           // no future yet
//   slot.store(promptly::async(f));
//   promptly::future<int> h = slot.load();     // !h.valid() if still empty
//   slot.compare_exchange(expected, desired);  // compares handle identity
//
// Reading an empty cell is not an error: load() and exchange() return a
// handle with valid() == false. Touching such a handle throws
// promptly::future_empty.
//
// Representation and invariants
//  * word_ = (pointer to a future_state<T>, or 0 for "no future") | lock bit.
//    Future states hold pointers, so they are at least pointer-aligned and
//    bit 0 is free for the lock (static_assert below).
//  * While word_ holds a pointer p, the cell owns one reference to *p.
//  * Only the holder of the lock bit changes the pointer, or takes a new
//    reference to the pointee (load): without the lock, a concurrent
//    exchange could drop the last reference between reading p and
//    incrementing its count. The lock is held for a few instructions that
//    neither park, nor block, nor run user code; the reference a store or
//    exchange displaces is released after unlocking, since dropping the
//    last one destroys T.
//  * lock() acquires and unlock() releases word_, so everything the storing
//    task wrote before publishing its handle is visible to a task that loads
//    the handle (the future's own state is published the same way).
//  * compare_exchange compares state pointers. `expected` holds a reference,
//    so its state cannot be freed and its address reused meanwhile (no ABA).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

#include "promptly/future.hpp"

namespace promptly {

template <class T>
class future_cell {
 public:
  future_cell() noexcept = default;
  explicit future_cell(future<T> f) noexcept : word_(bits(detail::future_access::release(std::move(f)))) {}
  future_cell(const future_cell&) = delete;
  future_cell& operator=(const future_cell&) = delete;
  ~future_cell() {
    if (state_t* s = pointer(word_.load(std::memory_order_acquire))) s->release();
  }

  // A handle to the future the cell holds, or an empty handle.
  future<T> load() const noexcept {
    state_t* s = lock();
    if (s != nullptr) s->add_ref();
    unlock(s);
    return detail::future_access::adopt(s);
  }

  // True if the cell held a future at the moment of the call.
  bool holds_future() const noexcept { return pointer(word_.load(std::memory_order_acquire)) != nullptr; }

  void store(future<T> f) noexcept { exchange(std::move(f)); }

  // Stores f (which may be empty) and returns what the cell held.
  future<T> exchange(future<T> f) noexcept {
    state_t* desired = detail::future_access::release(std::move(f));
    state_t* old = lock();
    unlock(desired);
    return detail::future_access::adopt(old);  // the cell's reference moves to the result
  }

  // If the cell holds the same future as `expected` (or both are empty),
  // stores `desired` and returns true. Otherwise copies the cell's handle
  // into `expected` and returns false.
  bool compare_exchange(future<T>& expected, future<T> desired) noexcept {
    state_t* want = detail::future_access::state(expected);
    state_t* cur = lock();
    if (cur == want) {
      unlock(detail::future_access::release(std::move(desired)));
      if (cur != nullptr) cur->release();  // the cell's reference; `expected` still holds one
      return true;
    }
    if (cur != nullptr) cur->add_ref();
    unlock(cur);
    expected = detail::future_access::adopt(cur);  // releases expected's old reference, outside the lock
    return false;
  }

 private:
  using state_t = detail::future_state<T>;
  static constexpr std::uintptr_t locked = 1;
  static_assert(alignof(detail::future_state_base) >= 2, "bit 0 of a state pointer must be free");

  static std::uintptr_t bits(state_t* s) noexcept { return reinterpret_cast<std::uintptr_t>(s); }
  static state_t* pointer(std::uintptr_t w) noexcept { return reinterpret_cast<state_t*>(w & ~locked); }

  // Sets the lock bit; returns the pointer the cell holds.
  state_t* lock() const noexcept {
    for (unsigned spins = 0;; ++spins) {
      // Acquire: pairs with unlock()'s release by the previous holder.
      const std::uintptr_t w = word_.fetch_or(locked, std::memory_order_acquire);
      if ((w & locked) == 0) return pointer(w);
      while ((word_.load(std::memory_order_relaxed) & locked) != 0) {
        if (++spins > 64) std::this_thread::yield();  // the holder may have been preempted
      }
    }
  }
  // Stores `s` and clears the lock bit.
  void unlock(state_t* s) const noexcept {
    // Release: publishes the new pointer and the reference counts changed under the lock.
    word_.store(bits(s), std::memory_order_release);
  }

  mutable std::atomic<std::uintptr_t> word_{0};
};

}  // namespace promptly
