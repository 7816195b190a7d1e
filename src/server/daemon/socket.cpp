#include "server/daemon/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace promptly::server::daemon {

namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

// Closes the descriptor unless released: no leak on the error paths.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    throw std::runtime_error("socket path '" + path + "' is empty or longer than " +
                             std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void check_private_dir(const std::string& dir) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) fail("socket directory '" + dir + "'", errno);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) fail("cannot create socket directory '" + dir + "'", errno);
    if (::stat(dir.c_str(), &st) != 0) fail("socket directory '" + dir + "'", errno);
  }
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error("socket directory '" + dir + "' is not a directory");
  if (st.st_uid != ::getuid())
    throw std::runtime_error("socket directory '" + dir + "' is owned by uid " + std::to_string(st.st_uid) +
                             ", not by this user (uid " + std::to_string(::getuid()) + ")");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    throw std::runtime_error("socket directory '" + dir + "' is writable by group or others; use a private "
                             "directory (mode 0700)");
}

}  // namespace

std::string default_socket_path() {
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x == '/')
    return std::string(x) + "/promptly/promptlyd.sock";
  return "/tmp/promptly-" + std::to_string(::getuid()) + "/promptlyd.sock";
}

int listen_unix(const std::string& path, socket_file_id* created) {
  const sockaddr_un addr = unix_address(path);
  check_private_dir(parent_dir(path));
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw std::runtime_error("'" + path + "' exists and is not a socket; refusing to replace it");
    // A socket file: live if something accepts on it.
    fd_guard probe{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (probe.fd < 0) fail("socket", errno);
    if (::connect(probe.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0)
      throw std::runtime_error("another server is listening on '" + path + "'");
    if (::unlink(path.c_str()) != 0) fail("cannot remove the stale socket '" + path + "'", errno);
  }
  fd_guard fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  if (fd.fd < 0) fail("socket", errno);
  // The socket file is created 0600 (umask during bind), so no other user
  // can connect even for an instant; fchmod-after-bind would leave a window.
  const mode_t old = ::umask(0177);
  const int rc = ::bind(fd.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old);
  if (rc != 0) fail("cannot bind '" + path + "'", bind_errno);
  if (::chmod(path.c_str(), 0600) != 0) fail("chmod '" + path + "'", errno);
  if (created != nullptr) {
    if (::lstat(path.c_str(), &st) != 0) fail("socket '" + path + "'", errno);
    *created = {st.st_dev, st.st_ino};
  }
  if (::listen(fd.fd, 1024) != 0) fail("listen on '" + path + "'", errno);
  return fd.release();
}

bool remove_socket_file(const std::string& path, socket_file_id created) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0 || st.st_dev != created.dev || st.st_ino != created.ino) return false;
  return ::unlink(path.c_str()) == 0;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

host_port parse_host_port(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    throw std::invalid_argument("'" + s + "' is not HOST:PORT");
  std::string host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = s.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5)
    throw std::invalid_argument("'" + port + "' is not a port number");
  const unsigned long p = std::stoul(port);
  if (p > 65535) throw std::invalid_argument("port " + port + " is out of range (0-65535)");
  return {host, static_cast<std::uint16_t>(p)};
}

int listen_tcp(const std::string& host, std::uint16_t port) {
  if (!is_loopback(host))
    throw std::runtime_error("TCP listener '" + host + "' refused: promptlyd listens only on loopback addresses "
                             "(127.0.0.0/8, ::1, localhost)");
  const bool v6 = host == "::1";
  fd_guard fd{::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  if (fd.fd < 0) fail("socket", errno);
  const int one = 1;
  ::setsockopt(fd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_loopback;
    rc = ::bind(fd.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (host == "localhost") a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    rc = ::bind(fd.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) fail("cannot bind " + host + ":" + std::to_string(port), errno);
  if (::listen(fd.fd, 1024) != 0) fail("listen on " + host + ":" + std::to_string(port), errno);
  return fd.release();
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) fail("getsockname", errno);
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

int connect_unix(const std::string& path) {
  const sockaddr_un addr = unix_address(path);
  fd_guard fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (fd.fd < 0) fail("socket", errno);
  if (::connect(fd.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    fail("cannot connect to '" + path + "' (is promptlyd running?)", errno);
  return fd.release();
}

int connect_tcp(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw std::runtime_error("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  int last = ECONNREFUSED;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    fd_guard fd{::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol)};
    if (fd.fd < 0) {
      last = errno;
      continue;
    }
    if (::connect(fd.fd, p->ai_addr, p->ai_addrlen) == 0) {
      const int one = 1;
      ::setsockopt(fd.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(res);
      return fd.release();
    }
    last = errno;
  }
  ::freeaddrinfo(res);
  fail("cannot connect to " + host + ":" + service, last);
}

std::string read_token_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) fail("token file '" + path + "'", errno);
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    throw std::runtime_error("token file '" + path + "' is accessible by group or others; chmod 600 it");
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) throw std::runtime_error("cannot read token file '" + path + "'");
  const auto b = line.find_first_not_of(" \t\r\n");
  const auto e = line.find_last_not_of(" \t\r\n");
  std::string token = b == std::string::npos ? "" : line.substr(b, e - b + 1);
  if (token.size() < 16) throw std::runtime_error("token file '" + path + "': the token must have at least 16 characters");
  return token;
}

}  // namespace promptly::server::daemon
