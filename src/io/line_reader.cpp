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
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

#include "fd_state.hpp"
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

class read_line_operation final : public basic_operation<std::string> {
 public:
  read_line_operation(fd_state* s, std::shared_ptr<line_reader::state> st, clock::time_point until) noexcept
      : basic_operation("read_line", s, direction::in, until), st_(std::move(st)) {}

  bool attempt() noexcept override {
    constexpr std::size_t chunk = 4096;
    std::string& buf = st_->buf;
    for (;;) {
      if (st_->discarding) {
        const std::size_t nl = buf.find('\n');
        buf.erase(0, nl == std::string::npos ? buf.size() : nl + 1);
        st_->scanned = 0;
        st_->discarding = nl == std::string::npos;
      }
      if (!st_->discarding) {
        const std::size_t nl = buf.find('\n', st_->scanned);
        if (nl != std::string::npos && nl > st_->max_line) {
          buf.erase(0, nl + 1);  // the whole oversized line is here: drop it now
          st_->scanned = 0;
          error = EMSGSIZE;
          return true;
        }
        if (nl != std::string::npos) {
          line_end_ = nl;
          return true;
        }
        st_->scanned = buf.size();
        if (buf.size() > st_->max_line) {
          buf.clear();  // too long already; the rest follows
          st_->scanned = 0;
          st_->discarding = true;
          error = EMSGSIZE;
          return true;
        }
      }
      if (st_->eof) {
        if (buf.empty()) error = err_eof;
        line_end_ = buf.size();  // the final, unterminated line
        return true;
      }
      // Nothing to read until the reactor's next event (fd_state.hpp, "Read readiness").
      if (!fd->read_may_succeed(deadline)) return false;
      const std::size_t old = buf.size();
      try {
        buf.resize(old + chunk);
      } catch (...) {
        error = ENOMEM;
        return true;
      }
      ssize_t n = fd->is_socket ? ::recv(fd->fd, buf.data() + old, chunk, 0) : ::read(fd->fd, buf.data() + old, chunk);
      buf.resize(n > 0 ? old + static_cast<std::size_t>(n) : old);
      if (n > 0) {
        fd->read_returned(static_cast<std::size_t>(n), chunk);
        continue;
      }
      if (n == 0) {
        st_->eof = true;
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        fd->read_would_block();
        return false;
      }
      error = errno;
      return true;
    }
  }

  void deliver() noexcept override {
    if (error == 0) {
      try {
        std::string& buf = st_->buf;
        line_.assign(buf, 0, line_end_);
        buf.erase(0, line_end_ < buf.size() ? line_end_ + 1 : line_end_);
        st_->scanned = 0;
      } catch (...) {
        error = ENOMEM;
      }
    }
    // Before the future is ready, so a read_line right after get() is allowed.
    // Release: this operation's writes to the state reach the next read_line,
    // whose exchange acquires.
    st_->pending.store(false, std::memory_order_release);
    basic_operation::deliver();
  }

 private:
  std::string take_result() override { return std::move(line_); }
  std::shared_ptr<line_reader::state> st_;
  std::size_t line_end_ = 0;
  std::string line_;
};

}  // namespace
}  // namespace detail

line_reader::line_reader(descriptor& d, std::size_t max_line) : d_(&d), state_(std::make_shared<state>(max_line)) {}

line_reader::~line_reader() = default;

future<std::string> line_reader::read_line(deadline until, std::stop_token stop) {
  if (!state_) throw std::logic_error("promptly::io::line_reader::read_line on a moved-from reader");
  detail::fd_state* s = d_->state();
  if (s == nullptr) throw io::closed("read_line", -1);
  // Acquire pairs with deliver()'s release: the previous operation's writes
  // to the state are visible here. (The release half is not needed: the new
  // operation reaches the reactor through fd_state::mu.)
  if (state_->pending.exchange(true, std::memory_order_acq_rel))
    throw std::logic_error("promptly::io::line_reader::read_line: the previous read_line is still pending");
  auto* op = new detail::read_line_operation(s, state_, until.at());
  auto f = op->get_future();
  detail::start(op, stop);
  return f;
}

std::size_t line_reader::buffered() const noexcept { return state_ ? state_->buf.size() : 0; }

}  // namespace promptly::io
