// A task record: the unit that deques, injection queues and the scheduling
// loop move around. It is a type-erased closure reduced to one function
// pointer; concrete records (fork-join jobs kept on the caller's stack, heap
// tasks of task_group and async, resume records of parked fibers) embed it
// as their first base.
//
// Invariants
//  * A task pointer in a queue is executed exactly once, by whoever removes
//    it from the queue; execute() owns the record from then on (it frees it,
//    or signals the frame that owns it).
//  * `pool` is the pool the task runs in (a priority level l is pool l;
//    0 = most urgent).
//  * `next_queued` belongs to the injection queue holding the task (it links
//    its intrusive FIFO, so making a task ready never allocates); nobody
//    else touches it.
#pragma once

namespace promptly::detail {

struct task {
  using execute_fn = void (*)(task*);
  explicit task(execute_fn fn) noexcept : execute(fn) {}
  execute_fn execute;
  task* next_queued = nullptr;
  unsigned pool = 0;  // last: derived records may use the tail padding
};

}  // namespace promptly::detail
