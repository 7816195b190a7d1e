// What a running job sees (job_context): its args and pool, and
// cancellation: the flag its cutoffs poll, the stop token its io::
// operations take, and the waits that park the job's fiber until the
// awaited event or the job's cancellation, whichever comes first.
//
// A cancellable wait parks on a wake_event (the event protocol of
// promptly/detail/waiting.hpp: ready() / try_register()), which up to three
// sources fire: the awaited future's completion (a relay waiter registered
// on the future's state), the job's cancellation (a std::stop_callback on
// the job's stop token) and, for a timed wait, an io:: timer (a relay on the
// timer's future), so a timed wait uses the reactor's timer queue instead
// of a thread of its own or a poll.
//
// Invariants
//  * A wake_event fires once: slot goes 0 or (the parked waiter) -> fired,
//    never back; the parked waiter is woken exactly once, by the firer that
//    took it out of the slot, and try_register after fired returns false.
//  * A relay stays on its future's state until the future completes (the
//    state has no way to unregister a waiter), possibly after the wait
//    returned: it owns a reference to the event, so firing a spent event is
//    harmless, and it frees itself when it is woken.
//  * The stop_callback is destroyed before the wait returns; its destructor
//    waits for an invocation running on another thread (the caller of
//    cancel), so no callback touches the wait's frame afterwards.
#include <cassert>
#include <cstdint>
#include <memory>

#include "promptly/detail/waiting.hpp"
#include "promptly/io/error.hpp"
#include "promptly/io/timers.hpp"
#include "server_state.hpp"

namespace promptly::server {

namespace {

using promptly::detail::waiter;

class wake_event {
 public:
  bool ready() const noexcept { return slot_.load(std::memory_order_acquire) == fired_tag; }

  bool try_register(waiter* w) noexcept {
    std::uintptr_t expected = 0;
    // Acq_rel: the firer that takes w sees w's fields; acquire on failure:
    // a fired event's sources happened before the wait goes on.
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
struct relay final : waiter {
  explicit relay(std::shared_ptr<wake_event> e) noexcept : waiter(&on_complete), event(std::move(e)) {}
  static void on_complete(waiter* w) noexcept {
    auto* self = static_cast<relay*>(w);
    self->event->fire();
    delete self;
  }
  std::shared_ptr<wake_event> event;
};

// Fires `event` when `s` completes (at once if it has).
void fire_on_completion(promptly::detail::future_state_base& s, const std::shared_ptr<wake_event>& event) {
  auto* r = new relay(event);
  if (!s.try_register(r)) {
    delete r;
    event->fire();
  }
}

}  // namespace

const json& job_context::args() const noexcept { return impl_->args; }
job_id job_context::id() const noexcept { return impl_->id; }
promptly::pool job_context::pool() const noexcept {
  return promptly::pool(impl_->pool.load(std::memory_order_acquire));  // acquire: see start()'s store
}
promptly::runtime& job_context::runtime() const noexcept { return *impl_->rt; }
bool job_context::cancelled() const noexcept {
  return impl_->cancel_requested.load(std::memory_order_acquire);  // acquire: pairs with cancel()'s release
}
void job_context::throw_if_cancelled() const {
  if (cancelled()) throw_cancelled();
}
void job_context::throw_cancelled() const { throw job_cancelled("job " + std::to_string(impl_->id) + " was cancelled"); }
std::stop_token job_context::stop_token() const noexcept { return impl_->stop.get_token(); }

void job_context::sleep_for(std::chrono::nanoseconds d) const {
  throw_if_cancelled();
  try {
    io::sleep_for(d, impl_->stop.get_token()).get();
  } catch (const io::cancelled&) {
    throw_cancelled();  // the job's token is the sleep's only one
  }
}

job_context::wake_reason job_context::park_until(promptly::detail::future_state_base* s,
                                                 const std::chrono::steady_clock::time_point* deadline) const {
  if (s == nullptr || s->ready()) return wake_reason::ready;
  const std::stop_token job_stop = impl_->stop.get_token();
  if (job_stop.stop_requested()) return wake_reason::cancelled;
  auto event = std::make_shared<wake_event>();
  std::stop_source timer_stop;  // ends a timer still pending when the wait returns
  promptly::future<void> timer;
  {
    // Runs at once if the job was cancelled in between.
    std::stop_callback on_cancel(job_stop, [event]() noexcept { event->fire(); });
    fire_on_completion(*s, event);
    if (deadline != nullptr) {
      timer = io::sleep_until(*deadline, timer_stop.get_token());
      fire_on_completion(*promptly::detail::future_access::state(timer), event);
    }
    promptly::detail::wait_for(*event);
  }
  timer_stop.request_stop();
  if (s->ready()) return wake_reason::ready;
  if (job_stop.stop_requested()) return wake_reason::cancelled;
  assert(deadline != nullptr && std::chrono::steady_clock::now() >= *deadline);
  return wake_reason::timed_out;
}

}  // namespace promptly::server
