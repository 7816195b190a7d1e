// Socket addresses from the strings the public API takes: numeric IPv4 /
// IPv6 ("localhost" = 127.0.0.1; no name resolution, which would block) and
// Unix socket paths. Throw io::error(EINVAL / ENAMETOOLONG) naming `op`.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string_view>

namespace promptly::io::detail {

struct socket_address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_UNSPEC;
  const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&storage); }
};

socket_address ip_address(std::string_view host, std::uint16_t port, const char* op);
socket_address unix_address(std::string_view path, const char* op);

}  // namespace promptly::io::detail
