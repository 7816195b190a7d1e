// The "internet" of the proxy benchmark: an HTTP/1.1 server on loopback serving the 4096 sites
// of sites.hpp at /site/<i> (404 otherwise), one request per connection (Connection: close),
// from a few plain threads blocked in accept(). Runs inside the driver's process (and the
// test's), not the proxy's.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace proxy {

class origin_server {
 public:
  explicit origin_server(unsigned threads = 4);  // throws std::runtime_error if it cannot listen
  origin_server(const origin_server&) = delete;
  origin_server& operator=(const origin_server&) = delete;
  ~origin_server();  // stops accepting and joins the threads

  std::uint16_t port() const noexcept { return port_; }
  std::uint64_t served() const noexcept { return served_.load(std::memory_order_relaxed); }

 private:
  void serve();
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> served_{0};  // relaxed: a statistic
  std::vector<std::jthread> threads_;
};

}  // namespace proxy
