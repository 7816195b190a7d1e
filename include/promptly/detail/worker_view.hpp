// What inline (header) code may see of a worker: the deque of the level it
// serves, its park epoch, its slab, its level and the level the policy
// assigned it. The rest of the worker lives in src/sched/worker.hpp.
//
// Invariants
//  * tls_worker is the worker whose thread is running the calling code, or
//    null on a thread that is no worker.
//  * deque points to this worker's own deque for `level`; only the worker's
//    thread changes deque and level, and only at strand boundaries.
//  * assigned is written by the policy (any thread) and read relaxed at
//    every strand boundary; when it differs from level, the worker parks the
//    running fiber as a ready continuation of its level and moves.
//  * park_epoch increases every time a fiber parks on this worker. A frame
//    that captured (worker, epoch) before calling user code and sees the same
//    epoch afterwards has not left this worker, so the deque items it pushed
//    are still above any item pushed by other frames.
//  * Code that may have parked must not reuse a worker pointer obtained
//    before the park: a fiber can resume on another worker. It calls
//    reload_current_worker(), which the compiler cannot cache.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "promptly/detail/chase_lev_deque.hpp"
#include "promptly/detail/slab_allocator.hpp"
#include "promptly/detail/task.hpp"

namespace promptly::detail {

class scheduler;
using task_deque = chase_lev_deque<task*>;

// assigned == no_level: the policy gave this worker to no level; it sleeps.
inline constexpr unsigned no_level = ~0u;

struct worker_view {
  task_deque* deque = nullptr;
  std::atomic<std::uint64_t> park_epoch{0};
  // Taskflow's executor ("An Efficient Work-Stealing Scheduler for Task
  // Dependency Graph", Sec. II-A): a task that makes successors ready may keep
  // one here to be run next by this worker without touching the deque. Only the
  // scheduling loop consumes it, right after the task that set it returns.
  task* continuation = nullptr;
  slab_allocator* slab = nullptr;
  scheduler* sched = nullptr;
  unsigned index = 0;
  unsigned level = 0;
  std::atomic<unsigned> assigned{0};
};

extern constinit thread_local worker_view* tls_worker;

inline worker_view* current_worker() noexcept { return tls_worker; }
// Out of line on purpose: after a possible fiber switch the thread may differ.
worker_view* reload_current_worker() noexcept;

// Parks the running fiber as a ready continuation of its level so that the
// worker can move to its assigned level; returns the worker the fiber
// resumes on (it may differ).
worker_view* switch_level_at_boundary();

// Every strand boundary (spawn, sync, future create, future get, yield)
// calls this: one relaxed load and a compare when nothing changed.
inline worker_view* at_strand_boundary(worker_view* w) {
  if (w != nullptr && w->assigned.load(std::memory_order_relaxed) != w->level) [[unlikely]]
    return switch_level_at_boundary();
  return w;
}

// Pushes a ready task of the calling worker's level on its own deque. The
// one way inline code makes local work ready (join, task_group, async,
// graphs).
inline void push_local(worker_view& w, task* t) {
  t->level = w.level;
  w.deque->push(t);
}

// Makes a task ready at level t->level, from any thread: the calling
// worker's deque when it is a worker of `s` serving that level, otherwise
// the level's injection queue (Algorithm 1).
void schedule_ready(scheduler& s, task* t);
// Algorithm 1: pushes tasks (all of level `level`) to `s`'s injection queue
// of that level under one lock and wakes workers (one per task, at most all).
void inject_batch(scheduler& s, task* const* tasks, std::size_t count, unsigned level = 0);
// Throws std::out_of_range naming the level if `s` has no such level.
void check_level(const scheduler& s, unsigned level);

// Shutdown accounting for tasks not joined structurally (async): the
// runtime's destructor waits until every counted task has finished.
void count_detached_started(scheduler& s) noexcept;
void count_detached_finished(scheduler& s) noexcept;

}  // namespace promptly::detail
