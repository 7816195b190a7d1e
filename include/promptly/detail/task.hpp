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
//  * `group` is non-null only for task_group children; task_group::wait uses
//    it to recognise its own unstolen children at the bottom of the deque.
//  * `level` is the priority level the task runs at (0 = most urgent); the
//    single-level scheduler ignores it.
#pragma once

namespace promptly::detail {

struct task {
  using execute_fn = void (*)(task*);
  explicit task(execute_fn fn, const void* owner_group = nullptr) noexcept : execute(fn), group(owner_group) {}
  execute_fn execute;
  const void* group;
  unsigned level = 0;
};

}  // namespace promptly::detail
