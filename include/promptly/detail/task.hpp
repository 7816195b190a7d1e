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

#include <cstdint>

namespace promptly::detail {

struct task {
  using execute_fn = void (*)(task*);
  explicit task(execute_fn fn) noexcept : execute(fn) {}
  execute_fn execute;
  task* next_queued = nullptr;
  // 16 bits (pool ids stay below max_pools = 4096, src/sched/event_bitmap.hpp),
  // so that trace_parent fits beside it and the record keeps its tail
  // padding for derived records (a graph node's join counter).
  std::uint16_t pool = 0;
  // When the runtime traces: the trace number of the fiber that pushed this
  // task on its deque (push_local), recorded as a spawn only if the task
  // starts as a task of its own (stolen, mugged, popped by the loop); 0
  // otherwise.
  std::uint16_t trace_parent = 0;
};

}  // namespace promptly::detail
