// Parking a waiting task's fiber, resuming it, and blocking non-worker
// threads. See promptly/detail/waiting.hpp for the waiting protocol.
//
// Invariants
//  * Waiting never gives up on its event: when no fiber stack can be mapped
//    (vm.max_map_count, RLIMIT_AS), the waiting task blocks its worker's
//    thread until the event instead (src/sched/README.md, "Waiting when no
//    stack can be mapped"); a join never returns while its stolen branch runs.
//  * The wake path (wake_fiber) is noexcept and allocation-free: it pushes
//    the resume record, which carries its own queue link, and posts an event
//    to the policy thread; it never calls the policy.
//  * pool_record::parked counts the tasks of a pool whose fiber is parked
//    (or whose worker's thread is blocked), from before the waiter is
//    published until its resume record runs: remove_pool waits for a pool
//    with such tasks rather than strand them. The count rises while the
//    parking worker is still active in the pool and drops while the
//    resuming one is (asserted in resume_fiber), so the pool's last active
//    worker leaving, which wakes a waiting remove_pool, follows every drop.
#include <cassert>
#include <condition_variable>
#include <mutex>

#include "promptly/detail/waiting.hpp"
#include "chaos.hpp"
#include "scheduler.hpp"

namespace promptly::detail {
namespace {

// Lives in the parked fiber's frame; `resume` is the task that makes the
// fiber run again when the event wakes the waiter.
struct fiber_waiter final : waiter {
  // The resume task belongs to the pool the fiber parks in, so that the
  // event that wakes it makes it ready in that pool (docs/design.md, "Fibers").
  fiber_waiter(fiber_record& f, scheduler& s, unsigned pool) noexcept
      : waiter(&wake_fiber), resume(this), fiber(f), sched(s) {
    resume.pool = pool;
  }

  static void wake_fiber(waiter* w) noexcept {
    auto* self = static_cast<fiber_waiter*>(w);
    wake_resume_task(self->sched, &self->resume);
  }

  // The wake path: the waking worker's deque when it serves the pool and
  // has room, else the pool's injection queue (resumed lane).
  static void wake_resume_task(scheduler& s, task* t) noexcept {
    // Published to the resumer by the push below (release/acquire of the queues).
    static_cast<resume_task*>(t)->made_ready_ns = now_ns();
    worker_view* w = reload_current_worker();
    if (s.tracing()) [[unlikely]]
      s.trace_ready(w, trace_kind::wake_ready, t->pool, trace_id(&static_cast<resume_task*>(t)->owner->fiber));
    if (s.owns(w) && w->pool == t->pool && w->deque->try_push(t)) return;
    s.inject(t, /*resumed=*/true);
  }

  // Executed by the scheduling loop of some worker: switch to the parked
  // fiber; the loop's fiber becomes idle on this worker.
  static void resume_fiber(task* t) {
    fiber_waiter* self = static_cast<resume_task*>(t)->owner;
    worker& w = worker::of(*reload_current_worker());
    assert(w.active && w.at == &w.sched->pool_at(t->pool) && "a parked task resumes on a worker active in its pool");
    w.at->parked.fetch_sub(1, std::memory_order_seq_cst);  // seq-cst: read by remove_pool's quiescence check
    w.samples.record(mechanism_op::resume, elapsed_since(static_cast<resume_task*>(t)->made_ready_ns));
    w.sched->trace(w, trace_kind::resume, t->pool, trace_id(&self->fiber));  // the parked task runs on from here
    fiber_record& loop_fiber = *w.current;
    fiber_record& parked = self->fiber;  // *self ends when the parked fiber continues
    w.current = &parked;
    switch_fiber(loop_fiber, parked, [&loop_fiber] {
      worker& now = worker::of(*reload_current_worker());
      now.sched->make_fiber_idle(now, loop_fiber);
    });
  }

  struct resume_task : task {
    explicit resume_task(fiber_waiter* o) noexcept : task(&resume_fiber), owner(o) {}
    fiber_waiter* owner;
    std::uint64_t made_ready_ns = 0;  // when the wake path made it ready (mechanism timing)
  } resume;
  fiber_record& fiber;
  scheduler& sched;
};

struct thread_waiter final : waiter {
  thread_waiter() noexcept : waiter(&wake_thread) {}
  static void wake_thread(waiter* w) noexcept {
    auto* self = static_cast<thread_waiter*>(w);
    std::lock_guard lock(self->mutex);  // the waiter cannot return before we unlock
    self->done = true;
    self->cv.notify_one();
  }
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
};

// Parks the running fiber until `publish` has handed its waiter to someone
// who will wake it. Returns false, having done nothing, when no fiber can
// be had to carry on the worker's loop.
bool try_park(publish_fn publish, void* event) {
  worker& w = worker::of(*reload_current_worker());
  scheduler& s = *w.sched;
  fiber_record* next = s.try_take_idle_fiber(w);
  if (next == nullptr) return false;
  fiber_record& self = *w.current;
  fiber_waiter rec(self, s, w.pool);
  w.at->parked.fetch_add(1, std::memory_order_seq_cst);  // seq-cst: before the task leaves every queue
  chaos::point();
  // Frames that pushed work before this park must not pop it back (see
  // worker_view.hpp): the worker's loop continues on `next` and may run it.
  w.park_epoch.store(w.park_epoch.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  s.trace(w, trace_kind::park, w.pool, trace_id(&self));
  w.current = next;
  switch_fiber(self, *next, [&] {
    // On `next`'s stack; `self` is saved and may be resumed from now on.
    if (!publish(event, &rec)) fiber_waiter::wake_resume_task(s, &rec.resume);  // the event already happened
  });
  // Resumed, possibly on another worker.
  return true;
}

}  // namespace

void park_current_fiber(publish_fn publish, void* event) {
  if (try_park(publish, event)) return;
  // No stack for another fiber: block this worker's thread instead; other
  // workers steal what its deque holds.
  worker& w = worker::of(*reload_current_worker());
  w.sched->block_worker(w, publish, event);
}

// A strand boundary found the worker assigned elsewhere: the running fiber
// parks as a ready continuation of its pool, on top of the worker's deque
// of that pool. The worker's loop (on another fiber) then moves, leaving
// that deque to be mugged by a worker that serves the pool, which resumes
// this fiber there. Without a fiber to switch to, the boundary is skipped:
// the worker moves at its next boundary or when the task ends.
worker_view* switch_pool_at_boundary() {
  worker_view* self = reload_current_worker();
  // Only the donated mark differs: the worker parks only if a more urgent
  // pool of its set has work (its loop top then goes there).
  if (self->assigned.load(std::memory_order_relaxed) == self->accepted &&
      !self->sched->more_urgent_work_in_set(worker::of(*self)))
    return self;
  // The steal-boundary baseline: a reassigned core keeps running its own
  // work, and moves at its loop top once its deque is empty (AMCilk, Sec.
  // 3.4). A decision request still parks (the loop top takes it), and so
  // does a core given no pool (past the core limit, or taken by the
  // policy): the baseline delays moves between pools, while a core that
  // loses its place runs nothing under every policy (docs/policies.md,
  // "Core limit"); its deque goes to the pool as muggable at the loop top.
  if (const unsigned word = self->assigned.load(std::memory_order_relaxed);
      self->sched->switches_when_out_of_work() && word != no_pool && !(word & decide_request))
    return self;
  try_park(
      [](void*, waiter* w) noexcept {
        worker_view& self = *reload_current_worker();
        fiber_waiter::wake_resume_task(*self.sched, &static_cast<fiber_waiter*>(w)->resume);
        return true;
      },
      nullptr);
  return reload_current_worker();
}

void block_current_thread(publish_fn publish, void* event) {
  thread_waiter rec;
  if (!publish(event, &rec)) return;
  std::unique_lock lock(rec.mutex);
  rec.cv.wait(lock, [&] { return rec.done; });
}

}  // namespace promptly::detail
