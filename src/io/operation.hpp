// One pending I/O operation or timer, and the protocol that completes it
// exactly once (src/io/README.md, "Completing an operation exactly once").
//
// An operation is a heap record holding the promise its future reads. It
// may be completed by four parties racing each other: the reactor (the
// descriptor became ready and the system call finished), the timer queue
// (its deadline passed), its stop token (std::stop_callback, any thread) and
// close() of its descriptor (any thread). Whoever *claims* it records the
// outcome and delivers it; the others back off.
//
// Invariants
//  * fd operations: pending <=> linked in its descriptor's queue; linking,
//    unlinking and the system calls happen under fd_state::mu. Claiming =
//    unlinking.
//  * timer-only operations (fd == nullptr): pending <=> in the timer heap;
//    claiming = removing it from the heap under the timer queue's mutex.
//  * refs: 1 for the pending claim (dropped by the claimer after deliver),
//    plus 1 while an fd operation with a deadline is in the timer heap or
//    held by the timer queue's firing loop. At 0 the record is released():
//    a heap record is deleted; a record in a coroutine's frame resumes it
//    (src/io/README.md, "Operations in a coroutine's frame").
//  * deliver() runs exactly once, with no lock held (it wakes the waiter:
//    a parked fiber becomes a ready task of its runtime).
//  * The stop_callback lives in the record and is destroyed with it; its
//    destructor waits for a concurrent invocation on another thread, so the
//    callback never touches a freed record.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <stop_token>

#include "promptly/promise.hpp"

namespace promptly::io::detail {

struct fd_state;
using clock = std::chrono::steady_clock;

// True when `deadline` is set (clock::time_point::max() means none) and has
// passed. Without a deadline the clock is not read: at 200k operations a
// second the read was 4% of an echo server's user time
// (bench/results/io/echo-2026-11-29/).
inline bool deadline_passed(clock::time_point deadline) noexcept {
  return deadline != clock::time_point::max() && deadline <= clock::now();
}

// Pseudo error codes next to errno values (which are positive): outcomes
// that io:: itself decides, as opposed to errors the kernel returned.
inline constexpr int err_eof = -1;        // the stream ended
inline constexpr int err_closed = -2;     // the descriptor was closed through io::
inline constexpr int err_deadline = -3;   // the operation's deadline passed
inline constexpr int err_cancelled = -4;  // its stop token was triggered

// Builds the exception for a failed operation (error.cpp).
std::exception_ptr make_error(int code, const char* operation, int fd);

enum class direction : std::uint8_t { in, out };

class operation;

struct cancel_on_stop {
  operation* op;
  void operator()() noexcept;
};

class operation {
 public:
  static constexpr std::size_t not_in_heap = ~std::size_t{0};

  // `fd` null: a timer-only operation. Takes a reference on `fd`.
  operation(const char* name, fd_state* fd, direction dir, clock::time_point deadline) noexcept;
  virtual ~operation();
  operation(const operation&) = delete;
  operation& operator=(const operation&) = delete;

  // fd operations, under fd->mu: tries the system call(s). Returns true when
  // the operation is finished (result or `error` recorded), false when the
  // kernel would block.
  virtual bool attempt() noexcept { return false; }
  // Timer-only operations: the deadline passed (records the result).
  virtual void expire() noexcept {}
  // Fulfils the promise from `error` and the result. No lock held.
  virtual void deliver() noexcept = 0;
  // The last reference is gone: a heap record deletes itself; a record in an
  // awaiting coroutine's frame resumes it instead (the frame then ends it).
  virtual void released() noexcept { delete this; }

  bool has_deadline() const noexcept { return deadline != clock::time_point::max(); }

  const char* const name;
  fd_state* const fd;
  const int fd_number;  // for messages: the number at the time of the call
  const direction dir;
  const clock::time_point deadline;
  int error = 0;  // 0, an errno value, or one of the err_* codes above

  // Queue links: guarded by fd->mu.
  operation* prev = nullptr;
  operation* next = nullptr;
  bool linked = false;
  // fd operations: the deadline was put in the timer heap (set under fd->mu
  // when linking; read by the claimer, whose claim came after).
  bool timer_scheduled = false;
  // Timer heap position and tie-breaker: guarded by the timer queue's mutex.
  std::size_t heap_index = not_in_heap;
  std::uint64_t timer_seq = 0;

  std::atomic<std::uint32_t> refs{1};
  std::atomic<bool> cancel_requested{false};
  std::optional<std::stop_callback<cancel_on_stop>> on_stop;
};

// The operation's promise and result type.
template <class T>
class basic_operation : public operation {
 public:
  using operation::operation;
  future<T> get_future() { return promise_.get_future(); }

  void deliver() noexcept override {
    if (error != 0) {
      promise_.set_exception(make_error(error, name, fd_number));
    } else if constexpr (std::is_void_v<T>) {
      promise_.set_value();
    } else {
      try {
        promise_.set_value(take_result());
      } catch (...) {
        promise_.set_exception(std::current_exception());
      }
    }
  }

 protected:
  // The successful result (called once, from deliver).
  virtual T take_result() { if constexpr (!std::is_void_v<T>) return T{}; }

 private:
  promise<T> promise_;
};

// Starts `op` (created by the caller with refs == 1): tries it at once, or
// queues it with the reactor and, if it has a deadline, the timer queue.
// Ownership passes to the protocol; the caller must not touch `op` after
// this call (take its future first).
void start(operation* op, const std::stop_token& stop);
// The same, for a caller whose try_at_once (fd_state.hpp) returned false:
// it took the strand boundary already.
void start_after_miss(operation* op, const std::stop_token& stop);

// A ready future for an outcome of try_at_once: `value`, or the error
// `error` (an errno value or an err_* code) of `operation` on `fd`.
template <class T>
future<T> ready_outcome(int error, const char* operation, int fd, T&& value) {
  promise<T> p;
  if (error != 0)
    p.set_exception(make_error(error, operation, fd));
  else
    p.set_value(std::forward<T>(value));
  return p.get_future();
}

void release(operation* op) noexcept;

// Reactor thread, for an operation popped from the timer heap: a sleep or
// tick fires; an fd operation still pending fails with err_deadline. Drops
// the heap's reference.
void expire_deadline(operation* op) noexcept;

// Operations started and not yet delivered (io::stats()).
std::uint64_t pending_operations() noexcept;

// Completes operations that were just claimed (unlinked from their queue
// under fd->mu, which is no longer held): removes their deadline from the
// timer heap, delivers, drops the pending claim.
void finish_claimed(operation* op) noexcept;

}  // namespace promptly::io::detail
