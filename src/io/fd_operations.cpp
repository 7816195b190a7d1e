// read, write, recv, send, accept and connect as operations (operation.hpp):
// each attempt() is one non-blocking system call (or a short loop of them),
// run under fd_state::mu by whoever tries: the caller first, the reactor
// after an edge.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "address.hpp"
#include "fd_operations.hpp"
#include "fd_state.hpp"
#include "socket_calls.hpp"
#include "promptly/io/error.hpp"
#include "promptly/io/operations.hpp"

namespace promptly::io {
namespace detail {
namespace {

bool would_block(int e) noexcept { return e == EAGAIN || e == EWOULDBLOCK; }

fd_state* state_of(descriptor& d, const char* op) {
  if (d.state() == nullptr) throw io::closed(op, -1);  // empty (moved-from or default) descriptor
  return d.state();
}

// write(2) on a pipe without raising SIGPIPE in the calling thread: block
// it around the call and consume the one the call raised. (Sockets use
// MSG_NOSIGNAL instead; the reactor thread blocks SIGPIPE for good.)
ssize_t write_without_sigpipe(int fd, const void* p, std::size_t n) noexcept {
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;  // someone else's: leave it
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t r = ::write(fd, p, n);
  const int e = errno;
  if (r < 0 && e == EPIPE && !was_pending) {
    timespec zero{};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = e;
  return r;
}

// read / recv of at least one byte.
class read_operation final : public basic_operation<std::size_t> {
 public:
  read_operation(const char* name, fd_state* s, void* buf, std::size_t len, int flags, bool use_recv,
                 clock::time_point until) noexcept
      : basic_operation(name, s, direction::in, until), buf_(buf), len_(len), flags_(flags), recv_(use_recv) {}

  bool attempt() noexcept override {
    // Nothing to read until the reactor's next event (fd_state.hpp, "Read
    // readiness"). A zero-byte read completes at once, as read(2) does.
    if (len_ != 0 && !fd->read_may_succeed(deadline)) return false;
    for (;;) {
      ssize_t n = recv_ ? recv_socket(fd->fd, buf_, len_, flags_) : ::read(fd->fd, buf_, len_);
      if (n > 0 || (n == 0 && len_ == 0)) {
        if (flags_ == 0 && n > 0) fd->read_returned(static_cast<std::size_t>(n), len_);
        result_ = static_cast<std::size_t>(n);
        return true;
      }
      if (n == 0) {
        error = err_eof;
        return true;
      }
      if (errno == EINTR) continue;
      if (would_block(errno)) {
        fd->read_would_block();
        return false;
      }
      error = errno;
      return true;
    }
  }

 private:
  std::size_t take_result() override { return result_; }
  void* buf_;
  std::size_t len_;
  int flags_;
  bool recv_;
  std::size_t result_ = 0;
};

// write / send of the whole buffer from `done` on, continued across partial
// writes: true when finished (all written, or `error` set), false when the
// kernel would block. The attempt of a write operation, and of io::write's
// try at once.
bool write_some(int fd, bool use_send, const char* data, std::size_t len, int flags, std::size_t& done,
                int& error) noexcept {
  while (done < len) {
    ssize_t n = use_send ? send_socket(fd, data + done, len - done, flags | MSG_NOSIGNAL)
                         : write_without_sigpipe(fd, data + done, len - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || would_block(errno)) return false;
    error = errno;
    return true;
  }
  return true;
}

class write_operation final : public basic_operation<std::size_t> {
 public:
  // `done`: bytes already written (by a try at once).
  write_operation(const char* name, fd_state* s, const void* data, std::size_t len, int flags, bool use_send,
                  clock::time_point until, std::size_t done) noexcept
      : basic_operation(name, s, direction::out, until),
        data_(static_cast<const char*>(data)), len_(len), flags_(flags), send_(use_send), done_(done) {}

  bool attempt() noexcept override { return write_some(fd->fd, send_, data_, len_, flags_, done_, error); }

 private:
  std::size_t take_result() override { return done_; }
  const char* data_;
  std::size_t len_;
  int flags_;
  bool send_;
  std::size_t done_;
};

// io::write and io::send: the whole buffer at once when the kernel takes it
// (no heap record), else an operation for the rest.
future<std::size_t> start_write(const char* name, fd_state* s, std::string_view data, int flags, bool use_send,
                                deadline until, const std::stop_token& stop) {
  std::size_t done = 0;
  int error = 0;
  if (try_at_once(*s, direction::out, stop,
                  [&] { return write_some(s->fd, use_send, data.data(), data.size(), flags, done, error); }))
    return ready_outcome<std::size_t>(error, name, s->fd, std::size_t{done});
  auto* op = new write_operation(name, s, data.data(), data.size(), flags, use_send, until.at(), done);
  auto f = op->get_future();
  start_after_miss(op, stop);
  return f;
}

class accept_operation final : public basic_operation<descriptor> {
 public:
  accept_operation(fd_state* s, clock::time_point until, bool nodelay) noexcept
      : basic_operation("accept", s, direction::in, until), nodelay_(nodelay) {}
  ~accept_operation() override {
    if (accepted_ >= 0) ::close(accepted_);  // never delivered (failed to build the descriptor)
  }

  bool attempt() noexcept override {
    for (;;) {
      int c = ::accept4(fd->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c >= 0) {
        accepted_ = c;
        if (nodelay_) {
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        return true;
      }
      // A connection that was reset while queued: try the next one.
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (would_block(errno)) return false;
      error = errno;
      return true;
    }
  }

 private:
  descriptor take_result() override {
    descriptor d = descriptor_access::adopt_nonblocking(accepted_, true);
    accepted_ = -1;
    return d;
  }
  int accepted_ = -1;
  bool nodelay_;
};

// connect(2), non-blocking: EINPROGRESS, then writability, then SO_ERROR.
class connect_steps {
 public:
  connect_steps(const sockaddr* addr, socklen_t len) noexcept : len_(len) {
    std::memcpy(&addr_, addr, std::min<std::size_t>(len, sizeof addr_));
  }

  // One attempt on `fd` (an operation's attempt()): true when finished,
  // with `error` set on failure.
  bool step(int fd, int& error) noexcept {
    const auto* a = reinterpret_cast<const sockaddr*>(&addr_);
    if (!started_) {
      started_ = true;
      if (::connect(fd, a, len_) == 0) return true;
      // EINTR: the connection proceeds asynchronously, as for EINPROGRESS.
      if (errno == EINPROGRESS || errno == EINTR) return false;
      // EAGAIN on a Unix socket means its backlog is full: reported, not waited on.
      error = errno;
      return true;
    }
    int err = 0;
    socklen_t l = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0) err = errno;
    if (err != 0) {
      error = err;
      return true;
    }
    // No error pending: connected, or still in progress (a spurious attempt).
    if (::connect(fd, a, len_) == 0 || errno == EISCONN) return true;
    if (errno == EALREADY || errno == EINPROGRESS || errno == EINTR) return false;
    error = errno;
    return true;
  }

 private:
  sockaddr_storage addr_{};
  socklen_t len_;
  bool started_ = false;
};

class connect_operation final : public basic_operation<void> {
 public:
  connect_operation(fd_state* s, const sockaddr* addr, socklen_t len, clock::time_point until) noexcept
      : basic_operation("connect", s, direction::out, until), steps_(addr, len) {}
  bool attempt() noexcept override { return steps_.step(fd->fd, error); }

 private:
  connect_steps steps_;
};

// connect of a socket io:: created; delivers the connected descriptor.
class connect_new_operation final : public basic_operation<descriptor> {
 public:
  connect_new_operation(descriptor sock, const sockaddr* addr, socklen_t len, clock::time_point until) noexcept
      : basic_operation("connect", sock.state(), direction::out, until), sock_(std::move(sock)), steps_(addr, len) {}
  bool attempt() noexcept override { return steps_.step(fd->fd, error); }

 private:
  descriptor take_result() override { return std::move(sock_); }
  descriptor sock_;  // closed with the operation if it fails
  connect_steps steps_;
};

}  // namespace

future<descriptor> accept_connection(descriptor& listening, deadline until, std::stop_token stop, bool nodelay) {
  auto* op = new accept_operation(state_of(listening, "accept"), until.at(), nodelay);
  auto f = op->get_future();
  start(op, stop);
  return f;
}

}  // namespace detail

using detail::clock;

future<std::size_t> read(descriptor& d, std::span<char> buf, deadline until, std::stop_token stop) {
  auto* op =
      new detail::read_operation("read", detail::state_of(d, "read"), buf.data(), buf.size(), 0, false, until.at());
  auto f = op->get_future();
  detail::start(op, stop);
  return f;
}

future<std::size_t> read(descriptor& d, std::span<std::byte> buf, deadline until, std::stop_token stop) {
  return read(d, std::span<char>(reinterpret_cast<char*>(buf.data()), buf.size()), until, std::move(stop));
}

future<std::size_t> recv(descriptor& d, std::span<char> buf, int flags, deadline until, std::stop_token stop) {
  auto* op =
      new detail::read_operation("recv", detail::state_of(d, "recv"), buf.data(), buf.size(), flags, true, until.at());
  auto f = op->get_future();
  detail::start(op, stop);
  return f;
}

future<std::size_t> write(descriptor& d, std::string_view data, deadline until, std::stop_token stop) {
  detail::fd_state* s = detail::state_of(d, "write");
  // Sockets: send(MSG_NOSIGNAL), the same bytes without SIGPIPE.
  return detail::start_write("write", s, data, 0, s->is_socket, until, stop);
}

future<std::size_t> write(descriptor& d, std::span<const std::byte> data, deadline until, std::stop_token stop) {
  return write(d, std::string_view(reinterpret_cast<const char*>(data.data()), data.size()), until, std::move(stop));
}

future<std::size_t> send(descriptor& d, std::string_view data, int flags, deadline until, std::stop_token stop) {
  return detail::start_write("send", detail::state_of(d, "send"), data, flags, true, until, stop);
}

future<descriptor> accept(descriptor& listening, deadline until, std::stop_token stop) {
  return detail::accept_connection(listening, until, std::move(stop), false);
}

future<void> connect(descriptor& socket, const sockaddr* address, socklen_t length, deadline until,
                     std::stop_token stop) {
  if (length > sizeof(sockaddr_storage)) throw io::error(EINVAL, "connect", socket.native_handle(), "address too long");
  auto* op = new detail::connect_operation(detail::state_of(socket, "connect"), address, length, until.at());
  auto f = op->get_future();
  detail::start(op, stop);
  return f;
}

namespace {

descriptor new_socket(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw io::error(errno, "socket", -1);
  return detail::descriptor_access::adopt_nonblocking(fd, true);
}

future<descriptor> connect_new(descriptor sock, const sockaddr* addr, socklen_t len, deadline until,
                               std::stop_token stop) {
  auto* op = new detail::connect_new_operation(std::move(sock), addr, len, until.at());
  auto f = op->get_future();
  detail::start(op, stop);
  return f;
}

}  // namespace

future<descriptor> connect_tcp(std::string_view host, std::uint16_t port, deadline until, std::stop_token stop) {
  const detail::socket_address a = detail::ip_address(host, port, "connect_tcp");
  descriptor sock = new_socket(a.family);
  int one = 1;
  ::setsockopt(sock.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return connect_new(std::move(sock), a.get(), a.length, until, std::move(stop));
}

future<descriptor> connect_unix(std::string_view path, deadline until, std::stop_token stop) {
  const detail::socket_address a = detail::unix_address(path, "connect_unix");
  return connect_new(new_socket(AF_UNIX), a.get(), a.length, until, std::move(stop));
}

}  // namespace promptly::io
