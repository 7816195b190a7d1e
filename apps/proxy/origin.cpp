#include "origin.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "http_stream.hpp"
#include "sites.hpp"

namespace proxy {

origin_server::origin_server(unsigned threads) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, SOMAXCONN) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error(std::string("origin server: cannot listen on loopback: ") + std::strerror(errno));
  port_ = ntohs(a.sin_port);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { serve(); });
}

origin_server::~origin_server() {
  stopping_.store(true);
  ::shutdown(fd_, SHUT_RDWR);  // wakes every accept()
  threads_.clear();            // joins
  ::close(fd_);
}

void origin_server::serve() {
  for (;;) {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (stopping_.load()) return;
      continue;  // EINTR, ECONNABORTED, ...
    }
    http_stream in(HTTP_REQUEST, 64 * 1024);
    char buf[4096];
    try {
      while (!in.complete()) {
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        for (std::size_t at = 0; at < static_cast<std::size_t>(n) && !in.complete();) at += in.feed(buf + at, n - at);
      }
    } catch (const http_error&) {
    }
    if (in.complete()) {
      auto m = in.take();
      auto site = site_of_path(m.url);
      std::string body = site ? site_body(*site) : "no such site\n";
      std::string r = std::string("HTTP/1.1 ") + (site ? "200 OK" : "404 Not Found") +
                      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      for (std::size_t at = 0; at < r.size();) {
        ssize_t n = ::send(c, r.data() + at, r.size() - at, MSG_NOSIGNAL);
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
      }
      served_.fetch_add(1, std::memory_order_relaxed);
    }
    ::close(c);
  }
}

}  // namespace proxy
