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
// A worker about to sleep may instead sleep inside the source's own wait
// (external_wait_fn; src/io/README.md, "A sleeping worker waits in
// epoll"): readiness then wakes the thread that will run the handler, and
// the reactor thread stays asleep. Tokio's parked worker blocks in its I/O
// driver the same way. The scheduler's notifier wakes such a worker
// through the source's doorbell (external_wake_fn) instead of a futex.
//
// Invariants
//  * Installed at most once per process and never removed: a worker may be
//    calling them at any time, including at exit.
//  * The poll never blocks; it returns true when it may have made a task
//    ready. None of the functions throws.
//  * The wait returns once `state` no longer holds `asleep` and the
//    doorbell was rung after that change (notifier::notify), or earlier
//    (it made tasks ready, or it gives the wait up); it returns
//    `unavailable` at once when it cannot host this worker (another worker
//    waits there), and the worker then sleeps on its futex.
#pragma once

#include <atomic>
#include <cstdint>

namespace promptly::detail {

using external_poll_fn = bool (*)() noexcept;

enum class external_wait_result {
  unavailable,  // not entered: sleep on the futex
  woken,        // the state changed, or the wait was given up: nothing made ready here
  made_ready,   // it made tasks ready (the caller's deque may hold some)
};
using external_wait_fn = external_wait_result (*)(const std::atomic<std::uint32_t>& state, std::uint32_t asleep) noexcept;
using external_wake_fn = void (*)() noexcept;

namespace external_poll_detail {
inline std::atomic<external_poll_fn> installed{nullptr};
inline std::atomic<external_wait_fn> installed_wait{nullptr};
inline std::atomic<external_wake_fn> installed_wake{nullptr};
}  // namespace external_poll_detail

// Called once by the I/O layer (reactor start).
inline void install_external_poll(external_poll_fn f) noexcept {
  // Release: a worker that sees the pointer sees what the installer built before.
  external_poll_detail::installed.store(f, std::memory_order_release);
}

// Called at most once by the I/O layer, after install_external_poll: the
// wake is installed before the wait, so a worker that sleeps in the wait
// can always be woken.
inline void install_external_wait(external_wait_fn wait, external_wake_fn wake) noexcept {
  // Release: as install_external_poll; the wake's store is ordered before the wait's.
  external_poll_detail::installed_wake.store(wake, std::memory_order_release);
  external_poll_detail::installed_wait.store(wait, std::memory_order_release);
}

// A sleeping worker's wait (notifier::commit_wait_polling).
inline external_wait_result wait_in_external_sources(const std::atomic<std::uint32_t>& state, std::uint32_t asleep) noexcept {
  const external_wait_fn f = external_poll_detail::installed_wait.load(std::memory_order_acquire);  // pairs with the install
  return f != nullptr ? f(state, asleep) : external_wait_result::unavailable;
}

// Rings the doorbell of the worker sleeping in the external wait
// (notifier::notify, after it changed that worker's state).
inline void wake_external_waiter() noexcept {
  const external_wake_fn f = external_poll_detail::installed_wake.load(std::memory_order_acquire);  // pairs with the install
  if (f != nullptr) f();
}

// A thief's poll: true when it may have made tasks ready.
inline bool poll_external_sources() noexcept {
  const external_poll_fn f = external_poll_detail::installed.load(std::memory_order_acquire);  // pairs with the install
  return f != nullptr && f();
}

}  // namespace promptly::detail
