// A one-shot event that several sources may fire, and the relay that fires one when a future
// completes: how a wait on "this future, or a timeout, or a stop request" parks on a single
// event (the event protocol of waiting.hpp: ready() / try_register()). The timed and
// cancellable waits (future::wait_for, job_context::wait_for) are built on it.
//
// Invariants
//  * A wake_event fires once: slot goes 0 or (the parked waiter) -> fired, never back; the
//    parked waiter is woken exactly once, by the firer that took it out of the slot, and
//    try_register after fired returns false.
//  * A relay stays on its future's state until the future completes (a state has no way to
//    unregister a waiter), possibly after the wait returned: it owns a reference to the event,
//    so firing a spent event is harmless, and it frees itself when it is woken.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "promptly/detail/waiting.hpp"

namespace promptly::detail {

class wake_event {
 public:
  bool ready() const noexcept { return slot_.load(std::memory_order_acquire) == fired_tag; }

  bool try_register(waiter* w) noexcept {
    std::uintptr_t expected = 0;
    // Acq_rel: the firer that takes w sees w's fields; acquire on failure: a fired event's
    // sources happened before the wait goes on.
    return slot_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(w), std::memory_order_acq_rel,
                                         std::memory_order_acquire);
  }

  void fire() noexcept {
    const std::uintptr_t prev = slot_.exchange(fired_tag, std::memory_order_acq_rel);  // acq_rel: see try_register
    if (prev != 0 && prev != fired_tag) {
      auto* w = reinterpret_cast<waiter*>(prev);
      w->wake(w);
    }
  }

 private:
  static constexpr std::uintptr_t fired_tag = 1;
  std::atomic<std::uintptr_t> slot_{0};  // 0, fired_tag, or the parked waiter
};

// Fires its event when the future it is registered on completes.
struct wake_relay final : waiter {
  explicit wake_relay(std::shared_ptr<wake_event> e) noexcept : waiter(&on_complete), event(std::move(e)) {}
  static void on_complete(waiter* w) noexcept {
    auto* self = static_cast<wake_relay*>(w);
    self->event->fire();
    delete self;
  }
  std::shared_ptr<wake_event> event;
};

// Fires `event` when the state `s` (a future_state_base, or anything with try_register)
// completes, at once if it has.
template <class State>
void fire_on_completion(State& s, const std::shared_ptr<wake_event>& event) {
  auto* r = new wake_relay(event);
  if (!s.try_register(r)) {
    delete r;
    event->fire();
  }
}

}  // namespace promptly::detail
