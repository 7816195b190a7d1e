// line_reader: read_line as one operation that reads until a newline, so a
// whole line costs one future and one deadline, and the reactor keeps
// reading on each edge without waking the task for partial lines.
//
// Lines longer than max_line: the read_line that meets one fails with
// EMSGSIZE as soon as the line is known to be too long (its newline, or
// max_line + 1 bytes without one), and the reader drops that line up to and
// including its newline, however much of it is still to come. The next
// read_line then returns the line after it. So one long line costs the
// client one error, not the connection, and the buffer never holds more
// than max_line plus one chunk.
#include "promptly/io/line_reader.hpp"

#include <unistd.h>

#include <new>
#include <stdexcept>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

#include "fd_state.hpp"
#include "socket_calls.hpp"
#include "promptly/io/error.hpp"

namespace promptly::io {

struct line_reader::state {
  explicit state(std::size_t max) : max_line(max) {}
  const std::size_t max_line;
  // Touched by the pending read_line's operation only (under its fd_state::mu
  // and then in deliver), else by the owner; the future's completion orders
  // the two.
  std::string buf;
  std::size_t scanned = 0;  // buf[0, scanned) holds no '\n'
  bool eof = false;
  bool discarding = false;  // inside an oversized line: drop bytes up to its '\n'

  std::atomic<bool> pending{false};
};

namespace detail {
namespace {

// Reads until `st` holds a line (or the stream ended): true when finished,
// with the line's end in `line_end` or `error` set; false when the kernel
// would block. Caller holds s.mu. The attempt of a read_line operation, and
// of read_line's try at once.
bool read_line_step(fd_state& s, line_reader::state& st, clock::time_point deadline, std::size_t& line_end,
                    int& error) noexcept {
  constexpr std::size_t chunk = 4096;
  std::string& buf = st.buf;
  for (;;) {
    if (st.discarding) {
      const std::size_t nl = buf.find('\n');
      buf.erase(0, nl == std::string::npos ? buf.size() : nl + 1);
      st.scanned = 0;
      st.discarding = nl == std::string::npos;
    }
    if (!st.discarding) {
      const std::size_t nl = buf.find('\n', st.scanned);
      if (nl != std::string::npos && nl > st.max_line) {
        buf.erase(0, nl + 1);  // the whole oversized line is here: drop it now
        st.scanned = 0;
        error = EMSGSIZE;
        return true;
      }
      if (nl != std::string::npos) {
        line_end = nl;
        return true;
      }
      st.scanned = buf.size();
      if (buf.size() > st.max_line) {
        buf.clear();  // too long already; the rest follows
        st.scanned = 0;
        st.discarding = true;
        error = EMSGSIZE;
        return true;
      }
    }
    if (st.eof) {
      if (buf.empty()) error = err_eof;
      line_end = buf.size();  // the final, unterminated line
      return true;
    }
    // Nothing to read until the reactor's next event (fd_state.hpp, "Read readiness").
    if (!s.read_may_succeed(deadline)) return false;
    // Received on the stack and appended: growing the string by a chunk
    // first would zero the whole chunk on every call.
    char in[chunk];
    const ssize_t n = s.is_socket ? recv_socket(s.fd, in, chunk, 0) : ::read(s.fd, in, chunk);
    if (n > 0) {
      try {
        buf.append(in, static_cast<std::size_t>(n));
      } catch (...) {
        error = ENOMEM;
        return true;
      }
      s.read_returned(static_cast<std::size_t>(n), chunk);
      continue;
    }
    if (n == 0) {
      st.eof = true;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      s.read_would_block();
      return false;
    }
    error = errno;
    return true;
  }
}

// The line read_line_step found (error == 0), taken out of the buffer; a
// failure to copy it becomes ENOMEM. Then the reader may start the next
// read_line. Release: these writes to the state reach the next read_line,
// whose exchange acquires.
std::string take_line(line_reader::state& st, std::size_t line_end, int& error) noexcept {
  std::string line;
  if (error == 0) {
    try {
      std::string& buf = st.buf;
      line.assign(buf, 0, line_end);
      buf.erase(0, line_end < buf.size() ? line_end + 1 : line_end);
      st.scanned = 0;
    } catch (...) {
      error = ENOMEM;
    }
  }
  st.pending.store(false, std::memory_order_release);
  return line;
}

class read_line_operation final : public basic_operation<std::string> {
 public:
  read_line_operation(fd_state* s, std::shared_ptr<line_reader::state> st, clock::time_point until) noexcept
      : basic_operation("read_line", s, direction::in, until), st_(std::move(st)) {}

  bool attempt() noexcept override { return read_line_step(*fd, *st_, deadline, line_end_, error); }

  void deliver() noexcept override {
    // Before the future is ready, so a read_line right after get() is allowed.
    line_ = take_line(*st_, line_end_, error);
    basic_operation::deliver();
  }

 private:
  std::string take_result() override { return std::move(line_); }
  std::shared_ptr<line_reader::state> st_;
  std::size_t line_end_ = 0;
  std::string line_;
};

// read_line_operation's twin in the awaiting coroutine's frame
// (line_reader::line_awaiter): it delivers into the awaiter, and resumes the
// coroutine when the protocol drops its last reference, after which nothing
// but the awaiter touches it.
class frame_read_line_operation final : public operation {
 public:
  frame_read_line_operation(fd_state* s, std::shared_ptr<line_reader::state> st, clock::time_point until,
                            co::detail::promise_base* owner, std::string* line, int* err) noexcept
      : operation("read_line", s, direction::in, until), st_(std::move(st)), owner_(owner), line_(line), err_(err) {}

  bool attempt() noexcept override { return read_line_step(*fd, *st_, deadline, line_end_, error); }
  void deliver() noexcept override {
    *line_ = take_line(*st_, line_end_, error);
    *err_ = error;
  }
  void released() noexcept override { owner_->make_ready(promptly::detail::reload_current_worker()); }

 private:
  std::shared_ptr<line_reader::state> st_;
  co::detail::promise_base* owner_;
  std::string* line_;
  int* err_;
  std::size_t line_end_ = 0;
};

}  // namespace
}  // namespace detail

line_reader::line_awaiter line_reader::co_read_line(deadline until, std::stop_token stop) {
  return line_awaiter(*this, until, std::move(stop));
}

line_reader::line_awaiter::~line_awaiter() {
  if (op_made_) std::launder(reinterpret_cast<detail::operation*>(op_))->~operation();
}

bool line_reader::line_awaiter::await_ready() {
  if (awaited_) throw std::logic_error("promptly::io::line_reader::co_read_line: its result was awaited already");
  awaited_ = true;
  first_try t = r_->begin_read("co_read_line", until_, stop_);
  fd_ = t.fd;
  line_ = std::move(t.line);
  error_ = t.error;
  return t.done;
}

bool line_reader::line_awaiter::suspend(co::detail::promise_base* owner) noexcept {
  static_assert(sizeof(detail::frame_read_line_operation) <= sizeof(op_));
  auto* op = new (op_) detail::frame_read_line_operation(fd_, r_->state_, until_.at(), owner, &line_, &error_);
  op_made_ = true;
  detail::start_after_miss(op, stop_);
  // Suspended: the operation's last release resumes the coroutine, perhaps
  // already on another thread, so neither the awaiter nor the frame is
  // touched after the start (co/task.hpp's invariants).
  return true;
}

std::string line_reader::line_awaiter::await_resume() {
  if (error_ != 0) std::rethrow_exception(detail::make_error(error_, "read_line", fd_->fd));
  return std::move(line_);
}

line_reader::line_reader(descriptor& d, std::size_t max_line) : d_(&d), state_(std::make_shared<state>(max_line)) {}

line_reader::~line_reader() = default;

line_reader::first_try line_reader::begin_read(const char* caller, deadline until, const std::stop_token& stop) {
  const auto name = [caller] { return std::string("promptly::io::line_reader::") + caller; };
  if (!state_) throw std::logic_error(name() + " on a moved-from reader");
  detail::fd_state* s = d_->state();
  if (s == nullptr) throw io::closed("read_line", -1);
  // Acquire pairs with deliver()'s release: the previous operation's writes
  // to the state are visible here. (The release half is not needed: the new
  // operation reaches the reactor through fd_state::mu.)
  if (state_->pending.exchange(true, std::memory_order_acq_rel))
    throw std::logic_error(name() + ": the previous read_line is still pending");
  // A line already buffered or received at once: no operation.
  first_try t{s, false, {}, 0};
  std::size_t line_end = 0;
  if (detail::try_at_once(*s, detail::direction::in, stop,
                          [&] { return detail::read_line_step(*s, *state_, until.at(), line_end, t.error); })) {
    t.line = detail::take_line(*state_, line_end, t.error);
    t.done = true;
  }
  return t;
}

future<std::string> line_reader::read_line(deadline until, std::stop_token stop) {
  first_try t = begin_read("read_line", until, stop);
  if (t.done) return detail::ready_outcome<std::string>(t.error, "read_line", t.fd->fd, std::move(t.line));
  auto* op = new detail::read_line_operation(t.fd, state_, until.at());
  auto f = op->get_future();
  detail::start_after_miss(op, stop);
  return f;
}

std::size_t line_reader::buffered() const noexcept { return state_ ? state_->buf.size() : 0; }

}  // namespace promptly::io
