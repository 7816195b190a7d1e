// What a running task can ask about itself, and the strand boundary it can
// offer.
#pragma once

#include "promptly/detail/worker_view.hpp"
#include "promptly/pool.hpp"

namespace promptly {

// The pool the calling task runs in (pool 0 outside a runtime's workers).
inline pool current_pool() noexcept {
  detail::worker_view* w = detail::current_worker();
  return pool(w != nullptr ? w->pool : 0);
}

// The level the calling task runs at: the id of its pool (0 outside a
// runtime's workers). For a task of a pool made by create_pool this is that
// pool's id, not its rank.
inline unsigned current_level() noexcept { return current_pool().id; }

// A strand boundary a long sequential loop can offer: if the policy moved
// this worker to another pool, the calling task parks as a ready
// continuation of its pool (another worker of that pool resumes it) and
// returns later. Costs one relaxed load and a compare when nothing changed.
inline void yield() { detail::at_strand_boundary(detail::current_worker()); }

}  // namespace promptly
