#include "server/daemon/client.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "server/daemon/socket.hpp"

namespace promptly::server::daemon {

client::client(const endpoint& ep) : token_(ep.token) {
  if (ep.tcp.empty()) {
    fd_ = connect_unix(ep.unix_path);
  } else {
    const auto hp = parse_host_port(ep.tcp);
    fd_ = connect_tcp(hp.host, hp.port);
  }
}

client::~client() {
  if (fd_ >= 0) ::close(fd_);
}

void client::send(nlohmann::json request) {
  if (!token_.empty()) request["token"] = token_;
  send_raw(request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void client::send_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("send to promptlyd: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::optional<std::string> client::receive_line() {
  for (;;) {
    const auto nl = in_.find('\n', in_off_);
    if (nl != std::string::npos) {
      std::string line = in_.substr(in_off_, nl - in_off_);
      in_off_ = nl + 1;
      if (in_off_ == in_.size()) {
        in_.clear();
        in_off_ = 0;
      } else if (in_off_ > (std::size_t{1} << 20)) {
        in_.erase(0, in_off_);
        in_off_ = 0;
      }
      return line;
    }
    char buf[64 * 1024];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("receive from promptlyd: ") + std::strerror(errno));
    if (in_off_ == in_.size()) return std::nullopt;
    throw std::runtime_error("promptlyd closed the connection in the middle of a reply");
  }
}

nlohmann::json client::receive() {
  auto line = receive_line();
  if (!line) throw std::runtime_error("promptlyd closed the connection");
  return nlohmann::json::parse(*line);
}

nlohmann::json client::call(nlohmann::json request) {
  send(std::move(request));
  return receive();
}

void client::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

}  // namespace promptly::server::daemon
