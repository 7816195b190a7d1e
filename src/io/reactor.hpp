// The reactor: one thread per process that waits on epoll for descriptor
// readiness and for the timerfd of the timer queue, and completes the
// operations that became possible: the I/O is performed without occupying
// a worker (DESIGN.md, "I/O and timers"). Its readiness backend is epoll or
// io_uring (backend.hpp chooses): with io_uring every descriptor (and the
// timerfd) has one multishot poll request in the ring, edge-triggered like
// the epoll registration, and the thread waits for their completions; the
// operations, their queues and their completion are the same.
//
// Per process, started lazily by the first operation that must wait (or
// the first timer), never stopped: see src/io/README.md ("One reactor per
// process") for why it is not per runtime and why it is never destroyed.
//
// Epoll registration is edge-triggered for both directions, made once per
// descriptor at its first EAGAIN, and stays until the descriptor is closed.
// On an event the reactor attempts the head operations of the ready
// direction's queue until one would block.
//
// Retiring: close() removes the descriptor from epoll (EPOLL_CTL_DEL) and
// hands the epoll reference of its fd_state to the reactor. The loop drops
// retired references at the top of an iteration, before epoll_wait: events
// of earlier iterations are fully processed by then, and a later
// epoll_wait cannot return a descriptor deleted before it started. So an
// event's fd_state pointer is always alive when the loop reads it.
//
// Who submits (io_uring): only the reactor thread. A request holds a
// reference to its file until it is freed, and the kernel frees it in
// completion work that runs on the thread that submitted it, when that
// thread next enters or leaves the kernel. A poll submitted by a worker
// kept a closed socket open (its peer saw no end of file) until that
// worker happened to run the work; the reactor thread waits in the ring
// itself, so it runs that work as soon as it is queued. watch() and
// unwatch() queue a request and write the eventfd, whose poll wakes the
// loop; the loop submits the queue in order, an arm under the state's
// mutex only if the state is still open (its fd then still names its
// file).
//
// Retiring with io_uring: close() queues a poll removal (its completion
// is tagged with the state's address | 1). The kernel may still post
// completions of the poll until its last one (no IORING_CQE_F_MORE), so the
// reactor drops the reference only when it has seen both that last
// completion for a closed state and the removal's completion
// (fd_state::uring_ends); a state closed before its poll was armed has its
// first end counted when the arm is skipped. A poll that ends by itself
// while the descriptor is open is re-armed under the state's mutex; since
// the queue keeps its order and the reactor thread is the only submitter,
// a removal always targets the newest poll of the state. From its removal's
// submission to its release a closed state is also in the ring's `retiring`
// set, so a process that exits mid-removal leaks nothing LeakSanitizer can
// see (its only other reference is the kernel's).
//
// Idle workers poll (epoll backend; src/io/README.md, "Idle workers
// poll"): a worker with nothing to run may call poll_from_idle_worker, a
// non-blocking epoll_wait whose events it handles like the reactor. While
// workers poll, the reactor waits on standby_ep_ (eventfd, timerfd) for a
// window and then polls the set itself if no worker did.
//
// Idle workers take ready descriptors (io_uring; src/io/README.md,
// "Backends"): while completions come in bursts and a worker polled within
// the window, the reactor queues readiness completions (uring::ready, one
// reference to the state per entry) instead of handling them; an idle
// worker's poll (poll_from_idle_worker) takes the whole queue and handles it
// like the reactor, and the reactor handles what waited a window. An entry
// is handled exactly once, by whoever took it from the queue under its
// mutex, and its reference is dropped after. Bound: the readiness
// completions reaped in about two windows (the reactor takes the queue
// once its oldest entry has waited a window, and waits at most a window
// while entries are queued).
//
// A sleeping worker waits in epoll (epoll backend; src/io/README.md): a
// worker about to sleep may block in epoll_wait on ep_ itself, one at a
// time (external_waiting_). Linux wakes the newest waiter of an epoll set
// first, so while it sleeps there readiness wakes it, not the reactor
// thread. The scheduler wakes it by writing doorbell_fd_ (edge-triggered in
// ep_); whoever else fetches the doorbell passes it on.
//
// Invariants
//  * Only the reactor thread reaps the ring's completions, reads the
//    eventfd and the timerfd, and drops the backend's references. It and
//    the sleeping worker block in epoll_wait on ep_; the sleeping worker
//    gives its wait up when it fetches one of the two internal descriptors
//    (level-triggered, they wake the reactor next). Idle workers call
//    epoll_wait(ep_, 0), one at a time (worker_polling_), and skip them.
//  * drop_retired frees retired states only after it has read
//    worker_polling_ false (seq-cst) and seen the sleeping worker, if any,
//    finish a round of its wait (external_rounds_, after it rang the
//    doorbell) or leave: no worker holds an event fetched before their
//    EPOLL_CTL_DEL.
//  * A doorbell fetched by anyone but the sleeping worker is rung again
//    while a worker sleeps in ep_: a notification is never swallowed.
//  * io_uring: only the reactor thread submits to the ring and reads its
//    completion queue; other threads hand states over through the request
//    queue (guarded by its mutex), which orders the state's construction
//    before the reactor's use of it.
//  * The reactor thread blocks every signal: user signal handlers never run
//    on it. (Writes to pipes consume the SIGPIPE they raise and report
//    EPIPE, on every thread; sockets use MSG_NOSIGNAL.)
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "../sched/external_poll.hpp"
#include "fd_state.hpp"
#include "timer_queue.hpp"

struct epoll_event;  // <sys/epoll.h>

namespace promptly::io::detail {

class reactor {
 public:
  // The process-wide reactor; starts it on the first call. Throws
  // io::error if epoll, eventfd or timerfd cannot be created.
  static reactor& instance();
  // Null until instance() has succeeded once.
  static reactor* started() noexcept;

  // Under s.mu, once per descriptor: adds it to epoll (or arms its poll in
  // the ring) and takes the backend's reference. Returns 0 or the errno of
  // epoll_ctl or of the submission (EPERM for a regular file, which never
  // blocks).
  int watch(fd_state& s) noexcept;
  // After close() set s.closed, without s.mu: removes it from epoll and
  // retires the epoll reference (see "Retiring").
  void unwatch(fd_state& s) noexcept;

  timer_queue& timers() noexcept { return timers_; }
  // "epoll" or "io_uring".
  const char* backend_name() const noexcept;

  // Statistics (io::stats()): relaxed, nothing is read through them.
  std::uint64_t watched() const noexcept { return watched_.load(std::memory_order_relaxed); }
  std::uint64_t wakeups() const noexcept { return wakeups_.load(std::memory_order_relaxed); }
  std::uint64_t worker_polls() const noexcept { return worker_polls_.load(std::memory_order_relaxed); }
  std::uint64_t worker_events() const noexcept { return worker_events_.load(std::memory_order_relaxed); }
  // Acquire: pairs with the increment after each handled event; whoever
  // reads a count sees those events' handling (io::stats, tests).
  std::uint64_t reactor_events() const noexcept { return reactor_events_.load(std::memory_order_acquire); }

 private:
  reactor();
  void run() noexcept;
  void run_epoll() noexcept;
  void on_ready(fd_state& s, std::uint32_t events) noexcept;
  // Release: after the event's handling (on_ready released s.mu); pairs
  // with reactor_events().
  void counted_reactor_event() noexcept { reactor_events_.fetch_add(1, std::memory_order_release); }
  void on_timer() noexcept;
  void drop_retired() noexcept;
  void wake() noexcept;
  void handle_epoll_events(const ::epoll_event* events, int n) noexcept;
  bool standing_by() const noexcept;
  int internal_epoll_set();
  void wait_standing_by() noexcept;

 public:
  // An idle worker's poll of the epoll set, or with io_uring of the
  // readiness the reactor queued for workers (sched/external_poll.hpp):
  // never blocks; true when it completed an operation. See "Idle workers
  // poll" in src/io/README.md.
  bool poll_from_idle_worker() noexcept;
  // A sleeping worker's wait in ep_ (sched/external_poll.hpp): blocks until
  // `state` no longer holds `asleep` (its notifier then rings the doorbell),
  // or it completed operations, or it gives the wait up to the reactor.
  // `unavailable` at once when another worker sleeps here.
  promptly::detail::external_wait_result wait_from_sleeping_worker(const std::atomic<std::uint32_t>& state,
                                                                   std::uint32_t asleep) noexcept;
  // Wakes the worker sleeping in ep_, if any.
  void ring_doorbell() noexcept;
  std::uint64_t worker_sleeps() const noexcept { return worker_sleeps_.load(std::memory_order_relaxed); }
  bool worker_sleeping() const noexcept { return external_waiting_.load(std::memory_order_relaxed); }
  std::uint64_t retiring() const noexcept { return retiring_.load(std::memory_order_relaxed); }

 private:
  int ep_ = -1;
  // epoll backend: the set with only wake_fd_ and timer_fd_, which the
  // reactor waits on while idle workers poll ep_ ("standing by").
  int standby_ep_ = -1;
  // Nanoseconds a standby wait lasts; 0 when workers do not poll.
  std::int64_t standby_ns_ = 0;
  // One idle worker polls at a time; the reactor frees retired states only
  // when no worker poll is in flight (drop_retired).
  std::atomic<bool> worker_polling_{false};
  // steady_clock nanoseconds of the latest idle worker's poll, and of the
  // latest one that handled an event.
  std::atomic<std::int64_t> worker_polled_ns_{0};
  std::atomic<std::int64_t> worker_fruitful_ns_{0};
  // A worker sleeps in (or is entering, or leaving) epoll_wait on ep_; the
  // rounds of its wait completed, each after its events were handled.
  std::atomic<bool> external_waiting_{false};
  std::atomic<std::uint64_t> external_rounds_{0};
  int doorbell_fd_ = -1;  // eventfd, edge-triggered in ep_: wakes the worker sleeping there
  void pass_on_doorbell() noexcept;
  int wake_fd_ = -1;   // eventfd: wakes the loop (epoll: a retired state to drop; io_uring: requests to submit)
  int timer_fd_ = -1;  // timerfd of timers_
  timer_queue timers_;
  std::mutex retire_mu_;
  std::vector<fd_state*> retired_;  // guarded by retire_mu_
  std::vector<operation*> expired_;  // reactor thread only
  std::atomic<std::uint64_t> watched_{0};
  std::atomic<std::uint64_t> wakeups_{0};
  std::atomic<std::uint64_t> worker_polls_{0};
  std::atomic<std::uint64_t> worker_events_{0};
  std::atomic<std::uint64_t> reactor_events_{0};  // readiness events the reactor thread handled
  std::atomic<std::uint64_t> worker_sleeps_{0};
  std::atomic<std::uint64_t> retiring_{0};  // epoll: closed states not yet freed
  std::thread thread_;

  // The io_uring backend (reactor.cpp); null with epoll.
  struct uring;
  uring* ring_ = nullptr;
  void run_uring() noexcept;
  void on_uring_completion(std::uint64_t tag, int res, unsigned flags) noexcept;
  void retire_uring_end(fd_state& s) noexcept;
  bool take_ring_ready(bool from_reactor) noexcept;
  // io_uring: poll_from_idle_worker takes the readiness the reactor queued
  // for workers (uring::ready); true when it handled some.
  bool poll_ring_from_idle_worker() noexcept;
  void hand_to_ring(fd_state& s, bool remove) noexcept;
  void submit_requests() noexcept;
};

// Attempts the head operations of `q` until one would block; unlinks the
// finished ones into `done` (caller holds the queue's fd_state::mu).
void drain(op_queue& q, std::vector<operation*>& done) noexcept;

}  // namespace promptly::io::detail
