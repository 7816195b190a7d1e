#include "driver.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "http_stream.hpp"
#include "sites.hpp"

namespace proxy {
namespace {
using clock_type = std::chrono::steady_clock;

int connect_loopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(std::string("proxy driver: cannot connect to port ") + std::to_string(port) + ": " +
                             std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// One keep-alive client connection: request, then the response (and when its first byte came).
struct client_conn {
  int fd;
  http_stream in{HTTP_RESPONSE, 1 << 20};
  std::string buffered;
  http_message get(const std::string& url, clock_type::time_point& first_byte) {
    const std::string req = "GET " + url + " HTTP/1.1\r\nHost: proxy\r\n\r\n";
    for (std::size_t at = 0; at < req.size();) {
      ssize_t n = ::send(fd, req.data() + at, req.size() - at, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("proxy driver: send failed");
      at += static_cast<std::size_t>(n);
    }
    bool first = true;
    char buf[16384];
    while (!in.complete()) {
      if (!buffered.empty()) {
        buffered.erase(0, in.feed(buffered.data(), buffered.size()));
        continue;
      }
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) throw std::runtime_error("proxy driver: the proxy closed the connection");
      if (first) first_byte = clock_type::now(), first = false;
      buffered.append(buf, static_cast<std::size_t>(n));
    }
    return in.take();
  }
};

}  // namespace

driver_report run_driver(const driver_options& o) {
  driver_report rep;
  std::mutex m;
  auto fail = [&](std::string what) {
    std::lock_guard lock(m);
    ++rep.failure_count;
    if (rep.failures.size() < 20) rep.failures.push_back(std::move(what));
  };
  const std::string origin = "http://127.0.0.1:" + std::to_string(o.origin_port);
  const auto start = clock_type::now();
  {
    std::vector<std::jthread> clients;
    for (std::size_t i = 0; i < o.clients; ++i)
      clients.emplace_back([&, i] {
        std::mt19937_64 rng(o.seed * 1000003 + i);
        std::vector<double> resp, first_byte, hit, miss, hit_b, miss_b;
        std::uint64_t answered = 0;
        try {
          client_conn c{connect_loopback(o.proxy_port), {HTTP_RESPONSE, 1 << 20}, {}};
          for (std::size_t k = 0; k < o.requests; ++k) {
            const std::size_t site = rng() % site_count;
            clock_type::time_point first{};
            const auto t0 = clock_type::now();
            http_message r = c.get(origin + "/site/" + std::to_string(site), first);
            const auto t1 = clock_type::now();
            ++answered;
            const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
            first_byte.push_back(std::chrono::duration<double, std::micro>(first - t0).count());
            const std::int64_t sent_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count(),
                               first_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(first.time_since_epoch()).count();
            if (r.reacted_at_ns == 0) {
              fail("site " + std::to_string(site) + ": no X-Reacted-At-Ns header");
            } else if (r.reacted_at_ns < sent_ns || r.reacted_at_ns > first_ns) {
              fail("site " + std::to_string(site) + ": X-Reacted-At-Ns " + std::to_string(r.reacted_at_ns) +
                   " is not between the send (" + std::to_string(sent_ns) + ") and the first byte (" + std::to_string(first_ns) +
                   "): is the proxy on another machine? Its clock must be this machine's CLOCK_MONOTONIC");
            } else {
              resp.push_back(static_cast<double>(r.reacted_at_ns - sent_ns) / 1e3);
            }
            if (r.status != 200 || r.body != site_body(site)) {
              fail("site " + std::to_string(site) + ": status " + std::to_string(r.status) + ", " +
                   std::to_string(r.body.size()) + " bytes, not the page");
            } else if (r.x_cache == "HIT") {
              hit.push_back(us), hit_b.push_back(us * 1000 / static_cast<double>(r.body.size()));
            } else if (r.x_cache == "MISS") {
              miss.push_back(us), miss_b.push_back(us * 1000 / static_cast<double>(r.body.size()));
            } else {
              fail("site " + std::to_string(site) + ": no X-Cache header");
            }
          }
          ::close(c.fd);
        } catch (const std::exception& e) {
          fail("client " + std::to_string(i) + ": " + e.what());
        }
        std::lock_guard lock(m);
        rep.resp_us.insert(rep.resp_us.end(), resp.begin(), resp.end());
        rep.first_byte_us.insert(rep.first_byte_us.end(), first_byte.begin(), first_byte.end());
        rep.hit_us.insert(rep.hit_us.end(), hit.begin(), hit.end());
        rep.miss_us.insert(rep.miss_us.end(), miss.begin(), miss.end());
        rep.hit_ns_per_byte.insert(rep.hit_ns_per_byte.end(), hit_b.begin(), hit_b.end());
        rep.miss_ns_per_byte.insert(rep.miss_ns_per_byte.end(), miss_b.begin(), miss_b.end());
        rep.answered += answered;
        rep.issued += o.requests;
      });
  }
  rep.elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
  try {
    client_conn c{connect_loopback(o.proxy_port), {HTTP_RESPONSE, 1 << 20}, {}};
    clock_type::time_point first;
    rep.proxy_stats = c.get("/proxy-stats", first).body;
    ::close(c.fd);
  } catch (const std::exception& e) {
    fail(std::string("stats: ") + e.what());
  }
  return rep;
}

}  // namespace proxy
