// Priority levels: level 0 is the most urgent; a runtime has
// runtime_config::levels of them. A level is a pool with a fixed rank
// (promptly/pool.hpp): level l is pool l. (Typed, compile-time-checked
// priorities are built on top of these.)
//
//   promptly::async(promptly::level{2}, f)     a future computed at level 2
//   tg.spawn(promptly::level{1}, f)            a task_group child at level 1
//   rt.submit(promptly::level{0}, f)           from any thread
//   promptly::current_level()                  the level the caller runs at (this_task.hpp)
//   promptly::yield()                          a strand boundary for long loops (this_task.hpp)
//
// Work a task spawns without naming a level runs at the task's own level.
#pragma once

namespace promptly {

struct level {
  unsigned value = 0;
  friend bool operator==(level, level) = default;
};

}  // namespace promptly
