// How a task waits without blocking its worker.
//
// A waiting point is an *event* with two operations:
//   ready()            acquire-load: has the event happened?
//   try_register(w)    publish waiter w; returns false if the event already
//                      happened (then nobody will wake w).
// wait_for(ev) parks the calling fiber (on a worker) or blocks the calling
// thread (elsewhere) until the event happens. Parking hands the worker to a
// pooled fiber that continues the scheduling loop, so a waiting task never
// runs an unrelated task on its own stack (src/sched/README.md, "Waiting").
//
// Invariants
//  * The waker calls w->wake(w) exactly once per successful try_register,
//    and never touches the event after that call.
//  * try_register runs after the waiting fiber's context is saved (it runs
//    on the next fiber's stack), so a concurrent waker can resume it at once.
//    Events usually live on the waiter's stack, so once w is published
//    try_register must not read the event itself: the resumed waiter may
//    have ended it. A re-check after publishing reads what it needs through
//    references copied before (src/sched/pools.cpp, pool_removal_event).
#pragma once

#include <atomic>
#include <cstdint>

#include "promptly/detail/worker_view.hpp"

namespace promptly::detail {

struct waiter {
  using wake_fn = void (*)(waiter*) noexcept;
  explicit waiter(wake_fn fn) noexcept : wake(fn) {}
  waiter* next = nullptr;
  wake_fn wake;
};

using publish_fn = bool (*)(void* event, waiter* w) noexcept;

// Out of line (src/sched/parking.cpp).
void park_current_fiber(publish_fn publish, void* event);
void block_current_thread(publish_fn publish, void* event);

template <class Event>
void wait_for(Event& ev) {
  if (ev.ready()) return;
  publish_fn publish = [](void* e, waiter* w) noexcept { return static_cast<Event*>(e)->try_register(w); };
  if (current_worker() != nullptr)
    park_current_fiber(publish, &ev);
  else
    block_current_thread(publish, &ev);
}

// A countdown with at most one waiter: join's latch and task_group's counter.
// state_ = (pending << 1) | waiter_registered.
class completion_counter {
 public:
  explicit completion_counter(std::uint64_t pending = 0) noexcept : state_(pending << 1) {}

  void add(std::uint64_t n = 1) noexcept { state_.fetch_add(n << 1, std::memory_order_relaxed); }

  // Acquire: pairs with arrive() so the finished tasks' writes are visible.
  bool ready() const noexcept { return (state_.load(std::memory_order_acquire) >> 1) == 0; }

  bool try_register(waiter* w) noexcept {
    waiter_ = w;  // published by the acq_rel RMW below
    std::uint64_t prev = state_.fetch_or(1, std::memory_order_acq_rel);
    if ((prev >> 1) == 0) {  // everything finished already: nobody will wake w
      state_.fetch_and(~std::uint64_t{1}, std::memory_order_relaxed);
      return false;
    }
    return true;
  }

  // The last arrival wakes the registered waiter. Without a waiter, the
  // fetch_sub is this call's last access to *this (the owner may free it).
  void arrive() noexcept {
    std::uint64_t prev = state_.fetch_sub(2, std::memory_order_acq_rel);
    if (prev == 3) {  // pending was 1 and a waiter is registered
      waiter* w = waiter_;
      // The waiter is parked, so *this is alive until w->wake runs; clear the
      // flag first so the counter can be reused after the waiter resumes.
      state_.store(0, std::memory_order_relaxed);
      w->wake(w);
    }
  }

 private:
  std::atomic<std::uint64_t> state_;
  waiter* waiter_ = nullptr;
};

}  // namespace promptly::detail
