// Work that reaches the runtime from a source an idle worker can poll
// itself: the I/O reactor's readiness set (src/io/README.md, "Idle workers
// poll"). Go's scheduler polls its netpoller from the thread that runs out
// of work (findrunnable) and Tokio's worker parks on its I/O driver, so a
// ready connection is read on the thread that will run its handler: no
// reactor wake-up, no hand-off through an injection queue, no wake of a
// sleeping worker.
//
// The scheduler knows nothing about I/O: the I/O layer installs one poll
// function when its reactor starts, and a thief calls it where it would
// otherwise yield its CPU (scheduling_loop.cpp, explore_task). The function
// makes the tasks it completes ready the usual way (make_ready: the calling
// worker's deque when the task belongs to the pool it serves).
//
// Invariants
//  * Installed at most once per process and never removed: a worker may be
//    calling it at any time, including at exit.
//  * The function never blocks and never throws; it returns true when it
//    may have made a task ready.
#pragma once

#include <atomic>

namespace promptly::detail {

using external_poll_fn = bool (*)() noexcept;

namespace external_poll_detail {
inline std::atomic<external_poll_fn> installed{nullptr};
}

// Called once by the I/O layer (reactor start).
inline void install_external_poll(external_poll_fn f) noexcept {
  // Release: a worker that sees the pointer sees what the installer built before.
  external_poll_detail::installed.store(f, std::memory_order_release);
}

// A thief's poll: true when it may have made tasks ready.
inline bool poll_external_sources() noexcept {
  const external_poll_fn f = external_poll_detail::installed.load(std::memory_order_acquire);  // pairs with the install
  return f != nullptr && f();
}

}  // namespace promptly::detail
