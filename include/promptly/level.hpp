// Dynamic priority levels: level 0 is the most urgent; a runtime has
// runtime_config::levels of them. (Typed, compile-time-checked priorities
// are built on top of these.)
//
//   promptly::async(promptly::level{2}, f)     a future computed at level 2
//   tg.spawn(promptly::level{1}, f)            a task_group child at level 1
//   rt.submit(promptly::level{0}, f)           from any thread
//   promptly::current_level()                  the level the caller runs at
//   promptly::yield()                          a strand boundary for long loops
//
// Work a task spawns without naming a level runs at the task's own level.
#pragma once

#include "promptly/detail/worker_view.hpp"

namespace promptly {

struct level {
  unsigned value = 0;
  friend bool operator==(level, level) = default;
};

// The level the calling task runs at (0 outside a runtime's workers).
inline unsigned current_level() noexcept {
  detail::worker_view* w = detail::current_worker();
  return w != nullptr ? w->level : 0;
}

// A strand boundary a long sequential loop can offer: if the policy moved
// this worker to another level, the calling task parks as a ready
// continuation of its level (another worker of that level resumes it) and
// returns later. Costs one relaxed load and a compare when nothing changed.
inline void yield() { detail::at_strand_boundary(detail::current_worker()); }

}  // namespace promptly
