// What inline (header) code may see of a worker: the deque of the pool it
// serves, its park epoch, its slab, its pool and the pool the policy
// assigned it. The rest of the worker lives in src/sched/worker.hpp.
//
// Invariants
//  * tls_worker is the worker whose thread is running the calling code, or
//    null on a thread that is no worker.
//  * deque points to this worker's own deque for `pool`; only the worker's
//    thread changes deque and pool, and only at strand boundaries.
//  * assigned is written by the policy thread (and its decide_request bit
//    by the mechanism) and read relaxed at every strand boundary; when it
//    differs from `accepted` (the word whose set of pools the worker serves
//    now, src/sched/assignment.hpp), the worker parks the running fiber as a
//    ready continuation of its pool and goes to its loop top, which takes a
//    requested decision and moves if its set calls for another pool.
//  * boundary_word is `accepted`, plus donated_mark while the worker serves
//    a pool ranked below the top of its set (it donated itself there): the
//    mark makes every strand boundary of a donated worker take the slow
//    path, which looks for work at the more urgent pools of its set (the
//    fairly prompt processor tries its primary at every iteration of its
//    loop). assigned never carries the mark.
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

// assigned == no_pool: the policy gave this worker to no pool; it sleeps.
// Otherwise the word is a pool id (the worker serves that one pool) or names
// a ranked set of pools, or every pool (src/sched/assignment.hpp).
inline constexpr unsigned no_pool = ~0u;
// A bit of `assigned` the mechanism sets on working workers when a pool
// became non-empty: the worker's next strand boundary then sees a mismatch
// (at no extra cost), parks its task and takes the pending decision at its
// loop top. Assignment words stay below it; no_pool is never flagged.
inline constexpr unsigned decide_request = 1u << 30;
// The bit of boundary_word (never of assigned) of a worker serving a pool
// ranked below the top of its set. Below the published bit, above pool ids.
inline constexpr unsigned donated_mark = 1u << 28;

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
  unsigned pool = 0;
  std::atomic<unsigned> assigned{0};
  unsigned accepted = 0;  // the assignment word whose set the worker serves (its own thread only)
  unsigned boundary_word = 0;  // accepted | donated_mark when donated (its own thread only)
  bool tracing = false;        // the runtime records an event trace (fixed before the worker starts)
};

extern constinit thread_local worker_view* tls_worker;

inline worker_view* current_worker() noexcept { return tls_worker; }
// Out of line on purpose: after a possible fiber switch the thread may differ.
worker_view* reload_current_worker() noexcept;

// Parks the running fiber as a ready continuation of its pool so that the
// worker can move to its assigned pool; returns the worker the fiber
// resumes on (it may differ).
worker_view* switch_pool_at_boundary();

// Every strand boundary (spawn, sync, future create, future get, yield)
// calls this: one relaxed load and a compare when nothing changed.
inline worker_view* at_strand_boundary(worker_view* w) {
  if (w != nullptr && w->assigned.load(std::memory_order_relaxed) != w->boundary_word) [[unlikely]]
    return switch_pool_at_boundary();
  return w;
}

// Notes in t which fiber spawned it (the runtime traces: worker_view::tracing).
// No clock read: a branch run inline by its parent is no event at all; one
// that starts as a task of its own is recorded as a spawn when it starts.
void trace_spawn(worker_view& w, task* t) noexcept;

// Pushes a ready task of the calling worker's pool on its own deque. The
// one way inline code makes local work ready (join, task_group, async,
// graphs).
inline void push_local(worker_view& w, task* t) {
  t->pool = w.pool;
  if (w.tracing) [[unlikely]]
    trace_spawn(w, t);
  w.deque->push(t);
}

// Makes task t ready in pool `pool`: the calling worker's own deque when
// `w` is a worker of `s` serving that pool, otherwise the pool's injection
// queue (Algorithm 1), which wakes a worker of the pool. Never allocates,
// never throws, never runs a policy: the one path every API that names a
// pool or level takes, after check_pool or admit validated the pool.
void make_ready(scheduler& s, worker_view* w, task* t, unsigned pool) noexcept;
// Algorithm 1: pushes tasks (all of pool `pool`) to `s`'s injection queue
// of that pool under one lock and wakes workers (one per task, at most all).
void inject_batch(scheduler& s, task* const* tasks, std::size_t count, unsigned pool) noexcept;
// Throws std::out_of_range naming the pool if `s` has no such pool, and
// promptly::pool_removed if it is being removed.
void check_pool(const scheduler& s, unsigned pool);

// Who asks to start counted work.
enum class admission { from_outside, from_task };
// Counts one task of pool `pool` that is not joined structurally (a
// submission, an async, a graph run): shutdown and remove_pool wait until
// every counted task has finished. Throws, counting nothing, what
// check_pool throws, and runtime_stopped for a submission from outside
// once shutdown began.
void admit(scheduler& s, unsigned pool, admission from);
// Counts without checking, for a caller whose pool is known live and
// held by other counted work (a graph run's starter).
void count_detached_started(scheduler& s, unsigned pool) noexcept;
void count_detached_finished(scheduler& s, unsigned pool) noexcept;

}  // namespace promptly::detail
