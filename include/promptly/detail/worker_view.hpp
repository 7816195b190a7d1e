// What inline (header) code may see of a worker: its deque, its park epoch
// and its slab. The rest of the worker lives in src/sched/worker.hpp.
//
// Invariants
//  * tls_worker is the worker whose thread is running the calling code, or
//    null on a thread that is no worker.
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

struct worker_view {
  chase_lev_deque<task*> deque;
  std::atomic<std::uint64_t> park_epoch{0};
  // seed 002 Sec. II-A: a task that makes successors ready may keep one here
  // to be run next by this worker without touching the deque. Only the
  // scheduling loop consumes it, right after the task that set it returns.
  task* continuation = nullptr;
  slab_allocator* slab = nullptr;
  scheduler* sched = nullptr;
  unsigned index = 0;
};

extern constinit thread_local worker_view* tls_worker;

inline worker_view* current_worker() noexcept { return tls_worker; }
// Out of line on purpose: after a possible fiber switch the thread may differ.
worker_view* reload_current_worker() noexcept;

// Pushes a ready task on the calling worker's own deque. The one way
// inline code makes local work ready (join, task_group, async, graphs).
inline void push_local(worker_view& w, task* t) { w.deque.push(t); }
// Makes a task ready from any thread: the calling worker's deque when the
// caller is a worker of `s`, otherwise `s`'s injection queue (Algorithm 1).
void schedule_ready(scheduler& s, task* t);
// Algorithm 1: pushes tasks to `s`'s injection queue under one lock and
// wakes workers (one per task, at most all).
void inject_batch(scheduler& s, task* const* tasks, std::size_t count);

// Shutdown accounting for tasks not joined structurally (async): the
// runtime's destructor waits until every counted task has finished.
void count_detached_started(scheduler& s) noexcept;
void count_detached_finished(scheduler& s) noexcept;

}  // namespace promptly::detail
