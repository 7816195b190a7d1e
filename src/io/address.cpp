// Parsing socket addresses (address.hpp).
#include "address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "promptly/io/error.hpp"

namespace promptly::io::detail {

socket_address ip_address(std::string_view host, std::uint16_t port, const char* op) {
  std::string h(host == "localhost" ? std::string_view("127.0.0.1") : host);
  socket_address a;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage); ::inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.length = sizeof(sockaddr_in);
    a.family = AF_INET;
    return a;
  }
  a = socket_address{};
  if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage); ::inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.length = sizeof(sockaddr_in6);
    a.family = AF_INET6;
    return a;
  }
  throw io::error(EINVAL, op, -1, "'" + h + "' is not a numeric IPv4 or IPv6 address (names are not resolved)");
}

socket_address unix_address(std::string_view path, const char* op) {
  socket_address a;
  auto* un = reinterpret_cast<sockaddr_un*>(&a.storage);
  if (path.empty() || path.size() >= sizeof un->sun_path)
    throw io::error(ENAMETOOLONG, op, -1,
                    "a Unix socket path needs 1 to " + std::to_string(sizeof un->sun_path - 1) + " bytes");
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path, path.data(), path.size());
  a.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  a.family = AF_UNIX;
  return a;
}

}  // namespace promptly::io::detail
