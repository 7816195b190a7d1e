// Structured fork-join: join(f, g). The parallel loops built on it are in parallel.hpp.
//
// join(f, g) runs f and g, possibly in parallel, and returns both results.
// g is pushed on the calling worker's deque as a job that lives in join's
// own stack frame (no heap allocation, as Rayon's join); the caller runs f,
// then pops g back and runs it inline unless a thief took it, in which case
// the caller waits (parking its fiber, never running unrelated work on its
// stack). Called outside any worker, join runs f then g sequentially.
//
// Exceptions: join always waits for both f and g (g may reference the
// caller's frame). If f throws, f's exception propagates and g's outcome is
// discarded; otherwise g's exception, if any, propagates.
#pragma once

#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "promptly/detail/job_result.hpp"
#include "promptly/detail/task.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/detail/worker_view.hpp"

namespace promptly {

namespace detail {

// The second branch of a join, kept in the joining frame.
template <class G>
struct stack_job final : task {
  using result_type = std::invoke_result_t<G&>;
  explicit stack_job(G& g) noexcept : task(&execute_stolen), fn(g) {}

  // Run by a thief (or by the owner's next fiber after the owner parked).
  static void execute_stolen(task* t) {
    auto* self = static_cast<stack_job*>(t);
    self->result.run(self->fn);
    self->done.arrive();  // last access to *self
  }

  G& fn;
  job_result<result_type> result;
  completion_counter done{1};
};

}  // namespace detail

template <class F, class G>
  requires std::invocable<F&> && std::invocable<G&>
auto join(F&& f, G&& g) -> std::pair<detail::stored_t<std::invoke_result_t<F&>>, detail::stored_t<std::invoke_result_t<G&>>> {
  using A = std::invoke_result_t<F&>;
  detail::worker_view* w = detail::at_strand_boundary(detail::current_worker());  // spawn boundary
  detail::job_result<A> ra;
  if (w == nullptr) {  // not on a worker: sequential
    ra.run(f);
    detail::job_result<std::invoke_result_t<G&>> rb;
    rb.run(g);
    auto a = ra.take();
    return {std::move(a), rb.take()};
  }
  detail::stack_job<std::remove_reference_t<G>> job(g);
  detail::push_local(*w, &job);
  const std::uint64_t epoch = w->park_epoch.load(std::memory_order_relaxed);
  ra.run(f);
  bool inline_g = false;
  if (w->park_epoch.load(std::memory_order_relaxed) == epoch) {
    // Not parked since the push: everything f pushed and left is above job.
    detail::task* top = w->deque->pop();
    if (top == &job) {
      inline_g = true;
    } else if (top != nullptr) {
      w->deque->push(top);  // f left unjoined work (an async); job is below it
    }
  }
  if (inline_g) {
    job.result.run(job.fn);  // nothing was stolen: the sync is a no-op, as in Cilk
  } else {
    detail::wait_for(job.done);
    detail::at_strand_boundary(detail::reload_current_worker());  // sync boundary
  }
  if (ra.failed()) std::rethrow_exception(ra.error());
  auto a = ra.take();
  return {std::move(a), job.result.take()};
}

}  // namespace promptly
