// detail::park_until (future.hpp): a wait for a future state that also ends at a deadline or
// on a stop request. The caller parks on one wake_event (detail/wake_event.hpp) that the
// future's completion, an io:: timer (the reactor's timer queue: no thread of its own, no
// polling) and a std::stop_callback fire, whichever comes first.
//
// Invariants
//  * The stop_callback is destroyed before the wait returns; its destructor waits for an
//    invocation running on another thread, so no callback touches the wait's frame afterwards.
//  * The timer is stopped when the wait returns, so a wait that ended early leaves no pending
//    sleep in the timer queue; the relays left on the future and the timer free themselves
//    when those complete.
#include <cassert>
#include <memory>

#include "promptly/detail/wake_event.hpp"
#include "promptly/future.hpp"
#include "promptly/io/timers.hpp"

namespace promptly::detail {

wake_reason park_until(future_state_base* s, const std::chrono::steady_clock::time_point* deadline,
                       const std::stop_token& stop) {
  if (s == nullptr || s->ready()) return wake_reason::ready;
  if (stop.stop_requested()) return wake_reason::stopped;
  if (deadline != nullptr && std::chrono::steady_clock::now() >= *deadline) return wake_reason::timed_out;
  auto event = std::make_shared<wake_event>();
  std::stop_source timer_stop;  // ends a timer still pending when the wait returns
  future<void> timer;
  {
    // Runs at once if the stop was requested in between.
    std::stop_callback on_stop(stop, [event]() noexcept { event->fire(); });
    fire_on_completion(*s, event);
    if (deadline != nullptr) {
      timer = io::sleep_until(*deadline, timer_stop.get_token());
      fire_on_completion(*future_access::state(timer), event);
    }
    wait_for(*event);
  }
  timer_stop.request_stop();
  if (s->ready()) return wake_reason::ready;
  if (stop.stop_requested()) return wake_reason::stopped;
  assert(deadline != nullptr && std::chrono::steady_clock::now() >= *deadline);
  return wake_reason::timed_out;
}

}  // namespace promptly::detail
