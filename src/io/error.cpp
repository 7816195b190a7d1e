// io::error and its subclasses; the mapping from an operation's outcome to
// the exception its future rethrows.
#include <cerrno>
#include <cstring>
#include <string>

#include "operation.hpp"
#include "promptly/io/error.hpp"

namespace promptly::io {
namespace {

std::string describe(int errno_value) {
  const char* name = strerrorname_np(errno_value);
  const char* desc = strerrordesc_np(errno_value);
  std::string s = desc != nullptr ? desc : "unknown error " + std::to_string(errno_value);
  if (name != nullptr) s += std::string(" (") + name + ")";
  return s;
}

std::string message(int errno_value, const std::string& operation, int fd, const std::string& detail) {
  std::string m = "promptly::io::" + operation;
  m += fd >= 0 ? "(fd " + std::to_string(fd) + "): " : ": ";
  m += detail.empty() ? describe(errno_value) : detail;
  return m;
}

}  // namespace

error::error(int errno_value, std::string operation, int fd, std::string detail)
    : std::system_error(std::error_code(errno_value, std::generic_category())),
      info_(std::make_shared<const info>(info{operation, fd, message(errno_value, operation, fd, detail)})) {}

end_of_file::end_of_file(std::string operation, int fd)
    : error(0, std::move(operation), fd, "end of file (the peer closed its end of the stream)") {}

timed_out::timed_out(std::string operation, int fd, std::string detail)
    : error(ETIMEDOUT, std::move(operation), fd,
            detail.empty() ? "timed out: its deadline passed before it completed" : std::move(detail)) {}

cancelled::cancelled(std::string operation, int fd)
    : error(ECANCELED, std::move(operation), fd, "cancelled: its stop token was triggered before it completed") {}

closed::closed(std::string operation, int fd)
    : error(EBADF, std::move(operation), fd,
            "the descriptor was closed (through promptly::io) before the operation completed") {}

namespace detail {

std::exception_ptr make_error(int code, const char* operation, int fd) {
  switch (code) {
    case err_eof: return std::make_exception_ptr(end_of_file(operation, fd));
    case err_closed: return std::make_exception_ptr(closed(operation, fd));
    case err_deadline: return std::make_exception_ptr(timed_out(operation, fd));
    case err_cancelled: return std::make_exception_ptr(cancelled(operation, fd));
    case ETIMEDOUT: return std::make_exception_ptr(timed_out(operation, fd, describe(ETIMEDOUT)));
    case ECONNRESET:
    case EPIPE: return std::make_exception_ptr(connection_reset(code, operation, fd));
    default: return std::make_exception_ptr(error(code, operation, fd));
  }
}

}  // namespace detail
}  // namespace promptly::io
