// The shared state of one descriptor: its fd, its queues of pending
// operations (one per direction), whether the reactor watches it, and
// whether a read may find bytes.
//
// Read readiness: both backends report readiness edge-triggered, which
// promises an event for every arrival after a read that found the receive
// queue empty (epoll(7), "Do I need to continuously read/write a file
// descriptor until EAGAIN when using the EPOLLET flag?"). Such a read is
// one that failed with EAGAIN, or, on a stream socket, one that returned
// fewer bytes than it asked for: it took everything queued. Until the
// reactor's next event for the in direction a read would only fail with
// EAGAIN, so reads skip that system call and wait for the event: one
// system call less per request-response exchange (Tokio clears readiness
// on a short read for the same reason). Not after a hang-up or an error:
// the end of stream queued behind the data of a short read has no event of
// its own to come (the event that reported it may already be spent).
//
// Invariants
//  * mu guards closed, registered, in_ready, hung_up and both queues; every system call on
//    the fd made by io:: runs under mu, so after close() has set `closed`
//    no new system call starts and the fd number can be released. `fd`
//    itself never changes (messages keep naming it after the close).
//  * An operation is in a queue <=> it is pending (operation.hpp).
//  * Queues are FIFO: only the head of a queue is attempted, so operations
//    of one direction complete in the order they were queued.
//  * refs: 1 for the descriptor object, 1 per operation record, 1 while
//    registered with the reactor. That reference is dropped by the reactor
//    thread at a point where no event it fetched, or will fetch, can still
//    name this state (reactor.hpp, "Retiring").
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "operation.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/io/descriptor.hpp"

namespace promptly::io::detail {

// Intrusive FIFO of operations (links in operation).
class op_queue {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  operation* front() const noexcept { return head_; }

  void push_back(operation* op) noexcept {
    assert(!op->linked && "an operation is queued at most once");
    op->prev = tail_;
    op->next = nullptr;
    (tail_ ? tail_->next : head_) = op;
    tail_ = op;
    op->linked = true;
  }

  void erase(operation* op) noexcept {
    assert(op->linked && "only a queued operation can be claimed by unlinking");
    (op->prev ? op->prev->next : head_) = op->next;
    (op->next ? op->next->prev : tail_) = op->prev;
    op->prev = op->next = nullptr;
    op->linked = false;
  }

 private:
  operation* head_ = nullptr;
  operation* tail_ = nullptr;
};

// Operations claimed under fd_state::mu, to be finished after it is
// released (finish_claimed). Chained through the free `next` link of
// unlinked operations, so collecting them never allocates.
class claimed_list {
 public:
  void push(operation* op) noexcept {
    op->next = nullptr;
    (tail_ ? tail_->next : head_) = op;
    tail_ = op;
  }
  // Finishes every operation in order; call with no lock held.
  void finish_all() noexcept {
    for (operation* op = head_; op != nullptr;) {
      operation* next = op->next;  // read first: finishing may free op
      finish_claimed(op);
      op = next;
    }
    head_ = tail_ = nullptr;
  }

 private:
  operation* head_ = nullptr;
  operation* tail_ = nullptr;
};

// Attempts the head operations of `q` until one would block; unlinks the
// finished ones into `done`. The caller holds the queue's fd_state::mu.
void drain(op_queue& q, claimed_list& done) noexcept;

struct fd_state {
  fd_state(int fd_, bool is_socket_, bool is_stream_socket_) noexcept
      : fd(fd_), is_socket(is_socket_), is_stream_socket(is_stream_socket_) {}

  op_queue& queue(direction d) noexcept { return d == direction::in ? readers : writers; }

  // Relaxed: the caller already holds a reference, so the state is alive.
  void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    // Acq_rel: the last releaser sees every other holder's accesses.
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  std::mutex mu;
  const int fd;  // the number stays for messages; `closed` says whether it is open
  const bool is_socket;  // writes use send(MSG_NOSIGNAL)
  const bool is_stream_socket;  // a short read empties its receive queue
  bool closed = false;
  bool registered = false;

  // Read readiness (see the top of the file), under mu.
  // False when a read system call would only fail with EAGAIN. Only a
  // registered descriptor gets the events that make in_ready true again,
  // so an unregistered one always tries. A read whose deadline has passed
  // makes its one attempt anyway: it reports what is queued at that
  // moment, even if the reactor has not yet processed the event of its
  // arrival.
  bool read_may_succeed(clock::time_point deadline) const noexcept {
    return in_ready || !registered || deadline_passed(deadline);
  }
  // A read system call failed with EAGAIN.
  void read_would_block() noexcept { in_ready = hung_up; }
  // A read system call (no flags: MSG_PEEK takes nothing) returned `got` of
  // `asked` bytes, got > 0.
  void read_returned(std::size_t got, std::size_t asked) noexcept {
    if (got < asked && is_stream_socket && !hung_up) in_ready = false;
  }
  // The reactor's event for the in direction; `final` for a hang-up or an error.
  void readable_reported(bool final) noexcept {
    in_ready = true;
    hung_up = hung_up || final;
  }
  // io_uring backend, reactor thread only: how many of the two ends of a
  // closed descriptor's registration it has seen (its poll's last
  // completion, the poll removal's completion); the second drops the
  // reactor's reference (reactor.hpp, "Retiring").
  std::uint8_t uring_ends = 0;
  // io_uring backend, under mu: the errno with which the reactor thread
  // failed to submit this descriptor's poll, or 0. Operations that would
  // wait fail with it, as they fail with a refused epoll registration.
  int watch_error = 0;
  bool in_ready = true;  // read_may_succeed()
  bool hung_up = false;  // an event reported a hang-up or an error: in_ready stays true
  op_queue readers;
  op_queue writers;
  std::atomic<std::uint32_t> refs{1};
};

// The common case without a heap record (README.md, "Completing at once"):
// takes the strand boundary that start() takes, then, unless `stop` is
// requested, `s` is closed or an operation of `dir` is queued (they go
// first), runs `attempt` under s.mu: the system calls that the operation's
// attempt() would make, with the same result. True: `attempt` finished and
// its outcome (a result or an error) is the caller's, to put in a ready
// future. False: no outcome yet (the attempt may have made progress, such
// as bytes written, which the caller carries over); the caller creates the
// operation and passes it to start_after_miss, which tries it again under
// the lock (an edge may have come in between, and the reactor found no
// operation to give it to).
template <class Attempt>
bool try_at_once(fd_state& s, direction dir, const std::stop_token& stop, Attempt&& attempt) {
  promptly::detail::at_strand_boundary(promptly::detail::current_worker());
  if (stop.stop_requested()) return false;
  std::lock_guard lock(s.mu);
  if (s.closed || !s.queue(dir).empty()) return false;
  return attempt();
}

// Closes `s` once (descriptor.cpp): pending operations fail with io::closed,
// no system call starts afterwards, the reactor forgets it, the fd number is
// released. Idempotent; safe from any thread while others operate on `s`.
void close_state(fd_state& s) noexcept;

// Builds descriptors around fds io:: created itself (already non-blocking
// and close-on-exec), skipping the fcntl/fstat calls of adoption. Every
// socket io:: creates is a stream socket.
struct descriptor_access {
  static descriptor adopt_nonblocking(int fd, bool is_socket) {
    return descriptor(new fd_state(fd, is_socket, is_socket));
  }
};

}  // namespace promptly::io::detail
