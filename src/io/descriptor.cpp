// descriptor: adoption, close (which completes pending operations), pipes
// and socket pairs.
#include "promptly/io/descriptor.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "fd_state.hpp"
#include "promptly/io/error.hpp"
#include "reactor.hpp"

namespace promptly::io {
namespace detail {

// No new system call starts after `closed` is set: it is set under s.mu,
// where every call on the fd runs. So the fd number can be released last.
void close_state(fd_state& s) noexcept {
  detail::claimed_list done;
  bool registered;
  {
    std::lock_guard lock(s.mu);
    if (s.closed) return;
    s.closed = true;
    for (detail::op_queue* q : {&s.readers, &s.writers}) {
      while (detail::operation* op = q->front()) {
        q->erase(op);
        op->error = detail::err_closed;
        done.push(op);
      }
    }
    registered = s.registered;
  }
  done.finish_all();
  if (registered) detail::reactor::started()->unwatch(s);
  ::close(s.fd);  // EINTR: the fd is released anyway on Linux; do not retry
}

}  // namespace detail

descriptor::descriptor(int fd) {
  if (fd < 0) throw io::error(EBADF, "adopt", fd, "not an open file descriptor");
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (!(flags & O_NONBLOCK) && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0))
    throw io::error(errno, "adopt", fd);
  struct stat st {};
  const bool is_socket = ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
  int type = 0;
  socklen_t type_len = sizeof type;
  const bool is_stream = is_socket && ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM;
  state_ = new detail::fd_state(fd, is_socket, is_stream);
}

descriptor& descriptor::operator=(descriptor&& o) noexcept {
  if (this != &o) {
    descriptor old(std::move(*this));  // closes and releases the previous fd
    state_ = std::exchange(o.state_, nullptr);
  }
  return *this;
}

descriptor::~descriptor() {
  if (state_ == nullptr) return;
  detail::close_state(*state_);
  state_->release();
}

int descriptor::native_handle() const noexcept {
  if (state_ == nullptr) return -1;
  std::lock_guard lock(state_->mu);
  return state_->closed ? -1 : state_->fd;
}

void descriptor::close() noexcept {
  if (state_ != nullptr) detail::close_state(*state_);
}

void descriptor::shutdown_write() {
  if (state_ == nullptr) throw io::closed("shutdown", -1);
  std::lock_guard lock(state_->mu);  // the fd number cannot be released meanwhile
  if (state_->closed) throw io::closed("shutdown", state_->fd);
  if (::shutdown(state_->fd, SHUT_WR) != 0) throw io::error(errno, "shutdown", state_->fd);
}

std::pair<descriptor, descriptor> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) throw io::error(errno, "pipe", -1);
  return {detail::descriptor_access::adopt_nonblocking(fds[0], false),
          detail::descriptor_access::adopt_nonblocking(fds[1], false)};
}

std::pair<descriptor, descriptor> make_socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
    throw io::error(errno, "socketpair", -1);
  return {detail::descriptor_access::adopt_nonblocking(fds[0], true),
          detail::descriptor_access::adopt_nonblocking(fds[1], true)};
}

}  // namespace promptly::io
