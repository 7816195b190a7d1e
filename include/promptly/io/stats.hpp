// What the I/O reactor holds right now: for tests, leak checks and
// diagnosing a wait that does not end.
#pragma once

#include <cstdint>

namespace promptly::io {

struct reactor_stats {
  bool running = false;                  // the reactor thread has been started
  std::uint64_t pending_operations = 0;  // started, not yet completed (fd operations and timers)
  std::uint64_t pending_timers = 0;      // deadlines and sleeps in the timer heap
  std::uint64_t watched_descriptors = 0; // descriptors registered with the backend
  std::uint64_t wakeups = 0;             // returns of epoll_wait (io_uring: of the wait for completions) so far
  // Idle workers' polls of the epoll set (docs/io.md, "Idle workers poll"):
  // polls made, and readiness events they handled (the reactor thread did not).
  std::uint64_t worker_polls = 0;
  std::uint64_t worker_events = 0;
  // Readiness events the reactor thread handled (each one's handling is
  // done when the count includes it).
  std::uint64_t reactor_events = 0;
  // Times a worker went to sleep in the epoll set itself, and whether one
  // sleeps there now (docs/io.md, "A sleeping worker waits in epoll").
  std::uint64_t worker_sleeps = 0;
  bool worker_sleeping = false;
  // Closed descriptors whose state the epoll reactor has not freed yet: it
  // frees them once no poll can hold an event for them (0 when idle).
  std::uint64_t retiring_descriptors = 0;
  // The readiness backend the reactor runs: "epoll" or "io_uring" (docs/io.md,
  // "Backends"); empty until it started.
  const char* backend = "";
};

reactor_stats stats() noexcept;

}  // namespace promptly::io
