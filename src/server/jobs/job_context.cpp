// What a running job sees (job_context): its args and pool, and
// cancellation: the flag its cutoffs poll, the stop token its io::
// operations take, and the waits that park the job's fiber until the
// awaited event or the job's cancellation, whichever comes first.
//
// A cancellable wait is detail::park_until (src/io/timed_wait.cpp) with the
// job's stop token: it parks on one event that the awaited future's
// completion, the job's cancellation and, for a timed wait, an io:: timer
// fire, whichever comes first.
#include "promptly/io/error.hpp"
#include "promptly/io/timers.hpp"
#include "server_state.hpp"

namespace promptly::server {

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
  switch (promptly::detail::park_until(s, deadline, impl_->stop.get_token())) {
    case promptly::detail::wake_reason::ready:
      return wake_reason::ready;
    case promptly::detail::wake_reason::stopped:
      return wake_reason::cancelled;
    case promptly::detail::wake_reason::timed_out:
      break;
  }
  return wake_reason::timed_out;
}

}  // namespace promptly::server
