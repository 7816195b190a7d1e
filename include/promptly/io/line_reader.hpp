// A line reader over a stream descriptor (socket, pipe): the helper every
// line-oriented protocol needs (an echo server reads a line of text and
// writes it back).
//
//   io::line_reader lines(conn);
//   for (;;) {
//     std::string l = lines.read_line(5s).get();   // parks the task
//     io::write(conn, l + "\n").get();
//   }
//
// read_line() completes with the next line without its '\n' (a '\r' before
// it is kept). Bytes after the line stay buffered for the next call. At the
// end of the stream a final unterminated line is returned first; after that
// read_line throws io::end_of_file. The deadline covers the whole line.
//
// Lines longer than max_line bytes (not counting the '\n'): the read_line
// that meets one fails with io::error (EMSGSIZE) as soon as the line is
// known to be too long, without waiting for its end. The reader drops that
// line, up to and including its '\n' (even the part still to arrive), and
// the next read_line returns the line after it: a client that sent one long
// line can go on. (If the stream ends inside the long line, the next
// read_line throws io::end_of_file.) A program that rather ends the
// connection closes it on EMSGSIZE.
//
// One read_line may be pending per reader at a time; the reader may be
// destroyed while one is pending (the operation keeps what it needs). The
// descriptor must outlive the reader's calls.
#pragma once

#include <cassert>
#include <cstddef>
#include <memory>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>

#include "promptly/co/task.hpp"
#include "promptly/future.hpp"
#include "promptly/io/deadline.hpp"
#include "promptly/io/descriptor.hpp"

namespace promptly::io {

class line_reader {
 public:
  static constexpr std::size_t default_max_line = 64 * 1024;

  // max_line: the longest line read_line returns, in bytes without the '\n'.
  explicit line_reader(descriptor& d, std::size_t max_line = default_max_line);
  line_reader(line_reader&&) noexcept = default;
  ~line_reader();

  // Throws std::logic_error if a read_line of this reader is still pending.
  [[nodiscard]] future<std::string> read_line(deadline until = {}, std::stop_token stop = {});

  // In a co::task: `co_await lines.co_read_line(until, stop)` has read_line's
  // outcome (the line, or its exception), but a wait keeps the operation in
  // the awaiting coroutine's frame: no heap record, no future. Await it where
  // it is made; awaiting it twice throws std::logic_error. (Saturated echo at
  // 1000 connections: +3-6% requests/s over read_line's future,
  // bench/results/io/frame-read-line-2026-11-29/.)
  class line_awaiter;
  [[nodiscard]] line_awaiter co_read_line(deadline until = {}, std::stop_token stop = {});

  // Bytes received after the last line returned (not yet a full line; the
  // dropped part of an oversized line is not counted).
  std::size_t buffered() const noexcept;

  struct state;  // shared with a pending read_line (src/io/line_reader.cpp)

 private:
  // What read_line and co_read_line share before an operation exists: the
  // checks, the one-pending rule, and the try at once. Returns the
  // descriptor's state; `done` when the line (or `error`) came at once.
  struct first_try {
    detail::fd_state* fd;
    bool done;
    std::string line;
    int error;
  };
  first_try begin_read(const char* caller, deadline until, const std::stop_token& stop);

  descriptor* d_;
  std::shared_ptr<state> state_;
};

// co_read_line's awaiter. The operation is built in op_ when the coroutine
// suspends and resumes it once the I/O protocol has dropped its last
// reference to it (src/io/operation.hpp, `released`); the awaiter's
// destructor, after the resumption, ends it. A suspended co::task frame is
// never destroyed before it is resumed, so the operation outlives every
// access the protocol makes.
class line_reader::line_awaiter : public co::detail::scheduled_awaiter {
 public:
  line_awaiter(line_reader& r, deadline until, std::stop_token stop) noexcept
      : r_(&r), until_(until), stop_(std::move(stop)) {}
  // Moved only before it is awaited: GCC 12 awaits a moved copy of the
  // awaiter co::task's await_transform forwards. The source counts as
  // awaited, so `co_await std::move(a)` twice still throws.
  line_awaiter(line_awaiter&& o) noexcept
      : r_(o.r_), until_(o.until_), stop_(std::move(o.stop_)), fd_(o.fd_), line_(std::move(o.line_)), error_(o.error_),
        awaited_(std::exchange(o.awaited_, true)) {
    assert(!o.op_made_ && "a suspended co_read_line is never moved");
  }
  line_awaiter(const line_awaiter&) = delete;
  line_awaiter& operator=(const line_awaiter&) = delete;
  line_awaiter& operator=(line_awaiter&&) = delete;
  ~line_awaiter();

  // True when the line (or the outcome) was there at once: no suspension.
  bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    static_assert(std::is_base_of_v<co::detail::promise_base, P>, "co_read_line is awaited in a promptly::co::task");
    return suspend(&h.promise());
  }
  std::string await_resume();

 private:
  bool suspend(co::detail::promise_base* owner) noexcept;

  line_reader* r_;
  deadline until_;
  std::stop_token stop_;
  detail::fd_state* fd_ = nullptr;  // the descriptor's state, read by await_ready
  std::string line_;
  int error_ = 0;  // as operation::error
  bool awaited_ = false;
  bool op_made_ = false;
  alignas(16) std::byte op_[256];  // the operation (line_reader.cpp checks the size)
};

}  // namespace promptly::io
