// Errors of I/O operations. Every failure of an operation surfaces at
// future::get() as a promptly::io::error (a std::system_error) that names the
// operation, the descriptor and the errno:
//
//   promptly::io::read(fd 7): connection reset by peer (ECONNRESET)
//
// Subclasses let callers catch the cases a program handles differently:
//
//   class              errno_value()   when
//   end_of_file        0               read/recv/read_line found the stream ended
//   connection_reset   ECONNRESET,     the peer reset the connection, or a write
//                      EPIPE           found the reading end closed
//   timed_out          ETIMEDOUT       the operation's deadline passed first (or
//                                      the kernel timed out, e.g. a TCP connect)
//   cancelled          ECANCELED       its stop token was triggered first
//   closed             EBADF           its descriptor was closed through io::
//                                      (pending operations complete with this)
//
// Anything else (ECONNREFUSED, EMFILE, ...) is a plain io::error.
#pragma once

#include <memory>
#include <string>
#include <system_error>

namespace promptly::io {

class error : public std::system_error {
 public:
  // errno_value 0 is reserved for end_of_file. fd < 0: no descriptor involved.
  error(int errno_value, std::string operation, int fd, std::string detail = {});

  // The errno of the failure (0 for end_of_file).
  int errno_value() const noexcept { return code().value(); }
  // The operation that failed: "read", "write", "recv", "send", "accept",
  // "connect", "read_line", "sleep", "tick", or a setup call ("socket", "bind", ...).
  const std::string& operation() const noexcept { return info_->operation; }
  // The descriptor number at the time of the call, or -1.
  int fd() const noexcept { return info_->fd; }
  const char* what() const noexcept override { return info_->message.c_str(); }

 private:
  struct info {
    std::string operation;
    int fd;
    std::string message;
  };
  std::shared_ptr<const info> info_;  // shared: copying an exception never throws
};

class end_of_file : public error {
 public:
  end_of_file(std::string operation, int fd);
};

class connection_reset : public error {
 public:
  using error::error;
};

class timed_out : public error {
 public:
  // detail: the message after the operation's name (default: the deadline passed).
  timed_out(std::string operation, int fd, std::string detail = {});
};

class cancelled : public error {
 public:
  cancelled(std::string operation, int fd);
};

class closed : public error {
 public:
  closed(std::string operation, int fd);
};

}  // namespace promptly::io
