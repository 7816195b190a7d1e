// The caching web proxy of apps/proxy: its HTTP stream parser (nodejs/http-parser) splits
// pipelined messages and names what is wrong; the proxy answers misses and hits with the exact
// pages, in request order even when a miss hands the connection to a less urgent fetch, refuses
// what it must, and survives the closed-loop driver with every check passing; the driver names a
// reaction stamp it cannot measure from instead of recording it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "driver.hpp"
#include "http_stream.hpp"
#include "origin.hpp"
#include "priorities.hpp"
#include "server.hpp"
#include "sites.hpp"
#include "runtime_support.hpp"
#include "socket_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

// 2 workers, one level per priority of the app's order.
promptly::runtime_config config(const char* policy) { return ::config(2, policy, proxy::order::size); }

// A raw client: sends bytes, reads HTTP responses.
class raw_client {
 public:
  explicit raw_client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
  }
  ~raw_client() { ::close(fd_); }
  int fd() const { return fd_; }
  void send_raw(const std::string& s) { ASSERT_EQ(::send(fd_, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size())); }
  // The next response; status 0 if the proxy closed the connection first.
  proxy::http_message response() {
    char buf[16384];
    while (!in_.complete()) {
      if (!buf_.empty()) {
        buf_.erase(0, in_.feed(buf_.data(), buf_.size()));
        continue;
      }
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return {};
      buf_.append(buf, static_cast<std::size_t>(n));
    }
    return in_.take();
  }

 private:
  int fd_ = -1;
  proxy::http_stream in_{HTTP_RESPONSE, 1 << 20};
  std::string buf_;
};

std::string get(const std::string& url) { return "GET " + url + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

TEST(ProxyHttpStream, SplitsPipelinedMessagesAndNamesErrors) {
  proxy::http_stream s(HTTP_REQUEST, 1024);
  const std::string two = get("http://127.0.0.1:1/a") + get("/b");
  std::size_t used = s.feed(two.data(), two.size());
  ASSERT_TRUE(s.complete());
  EXPECT_LT(used, two.size());
  auto a = s.take();
  EXPECT_EQ(a.method, "GET");
  EXPECT_EQ(a.url, "http://127.0.0.1:1/a");
  EXPECT_TRUE(a.keep_alive);
  EXPECT_EQ(s.feed(two.data() + used, two.size() - used), two.size() - used);
  EXPECT_EQ(s.take().url, "/b");

  proxy::http_stream bad(HTTP_REQUEST, 1024);
  const std::string junk = "GET / HTTP/1.1\r\nHost x\r\n\r\n";
  EXPECT_EQ(what_of<proxy::http_error>([&] { bad.feed(junk.data(), junk.size()); }), "malformed HTTP: invalid character in header");
  proxy::http_stream small(HTTP_REQUEST, 64);
  std::string path(101, 'x');  // not "/" + std::string(100, 'x'): GCC 12 warns falsely on that (its bug 105651)
  path[0] = '/';
  const std::string big = get(path);
  EXPECT_EQ(what_of<proxy::http_error>([&] { small.feed(big.data(), big.size()); }), "HTTP message longer than 64 bytes");
  proxy::http_stream cut(HTTP_RESPONSE, 1024);
  const std::string half = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  cut.feed(half.data(), half.size());
  EXPECT_EQ(what_of<proxy::http_error>([&] { cut.finish(); }), "connection closed inside an HTTP message");
}

TEST(ProxyServer, AnswersMissesAndHitsInRequestOrder) {
  watchdog guard(hang_guard, "ProxyServer.AnswersMissesAndHitsInRequestOrder");
  proxy::origin_server origin;
  promptly::runtime rt{config("aps")};
  proxy::server srv(rt);
  raw_client c(srv.port());
  const std::string o = "http://127.0.0.1:" + std::to_string(origin.port());
  // Pipelined: two misses and a hit of the first, in one write. Each miss hands the connection
  // to a fetch task; the answers must still come back in request order.
  const std::int64_t sent_ns = proxy::monotonic_ns();
  c.send_raw(get(o + "/site/7") + get(o + "/site/4095") + get(o + "/site/7"));
  auto r1 = c.response(), r2 = c.response(), r3 = c.response();
  // Each answer says when the client loop took its request (the driver's "resp"): after the
  // send, before the answer came, and in request order.
  const std::int64_t answered_ns = proxy::monotonic_ns();
  EXPECT_LE(sent_ns, r1.reacted_at_ns);
  EXPECT_LE(r1.reacted_at_ns, r2.reacted_at_ns);
  EXPECT_LE(r2.reacted_at_ns, r3.reacted_at_ns);
  EXPECT_LE(r3.reacted_at_ns, answered_ns);
  EXPECT_EQ(r1.status, 200);
  EXPECT_EQ(r1.x_cache, "MISS");
  EXPECT_EQ(r1.body, proxy::site_body(7));
  EXPECT_EQ(r2.x_cache, "MISS");
  EXPECT_EQ(r2.body, proxy::site_body(4095));
  EXPECT_EQ(r3.x_cache, "HIT");
  EXPECT_EQ(r3.body, proxy::site_body(7));
  auto r4 = (c.send_raw(get(o + "/site/4096")), c.response());
  EXPECT_EQ(r4.status, 404);
  auto r5 = (c.send_raw(get("http://10.0.0.1/")), c.response());
  EXPECT_EQ(r5.status, 403);
  auto r6 = (c.send_raw("POST " + o + "/site/1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), c.response());
  EXPECT_EQ(r6.status, 405);
  auto r7 = (c.send_raw(get("/proxy-stats")), c.response());
  EXPECT_EQ(r7.body.rfind("{\"requests\": 7, \"hits\": 1, \"misses\": 3, \"errors\": 3,", 0), 0u) << r7.body;
  c.send_raw("GARBAGE\r\n\r\n");
  EXPECT_EQ(c.response().status, 400);
  EXPECT_EQ(c.response().status, 0);  // and the connection is closed
  srv.stop();
  EXPECT_EQ(origin.served(), 3u);
}

// Every open connection holds a task and its stack: past max_connections the proxy answers 503
// and closes, and a slot is free again once a connection has ended (the proxy gives it back
// before it closes the socket, so the client's end of file is the event to wait for).
TEST(ProxyServer, ConnectionsPastTheLimitAreAnswered503AndClosed) {
  watchdog guard(hang_guard, "ProxyServer.ConnectionsPastTheLimitAreAnswered503AndClosed");
  promptly::runtime rt{config("aps")};
  proxy::server_options opt;
  opt.max_connections = 2;
  proxy::server srv(rt, opt);
  raw_client first(srv.port()), second(srv.port()), third(srv.port());  // accepted in this order
  auto refused = third.response();
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.body, "the proxy has 2 connections open (its limit); retry later\n");
  EXPECT_EQ(third.response().status, 0);  // closed
  for (raw_client* c : {&first, &second}) {
    c->send_raw(get("/proxy-stats"));
    EXPECT_EQ(c->response().status, 200);
  }
  first.send_raw("GARBAGE\r\n\r\n");
  EXPECT_EQ(first.response().status, 400);
  EXPECT_EQ(first.response().status, 0);  // the proxy ended it: its slot is free
  raw_client fourth(srv.port());
  fourth.send_raw(get("/proxy-stats"));
  auto stats = fourth.response();
  EXPECT_EQ(stats.status, 200);
  EXPECT_NE(stats.body.find("\"refused_connections\": 1,"), std::string::npos) << stats.body;
  srv.stop();
  EXPECT_EQ(srv.counters().refused_connections, 1u);
}

// Without an idle timeout, max_connections clients that connect and send nothing, or trickle a
// request a byte at a time, hold every slot for good. With it, a connection that sent nothing
// is closed silently (as nginx closes an idle keep-alive connection), one cut short mid-request
// is answered 408 with Connection: close, trickled bytes do not extend the deadline, and the
// freed slots serve others.
TEST(ProxyServer, SilentAndTricklingConnectionsAreClosedAtTheIdleTimeout) {
  watchdog guard(hang_guard, "ProxyServer.SilentAndTricklingConnectionsAreClosedAtTheIdleTimeout");
  using namespace std::chrono_literals;
  promptly::runtime rt{config("aps")};
  proxy::server_options opt;
  opt.max_connections = 2;
  opt.idle_timeout = 300ms;
  proxy::server srv(rt, opt);
  raw_client idle(srv.port()), trickler(srv.port());
  idle.send_raw(get("/proxy-stats"));
  EXPECT_EQ(idle.response().status, 200);  // then nothing more: an idle keep-alive connection
  // 200 bytes at 50 ms would take 10 s: a deadline that each byte renewed would never pass.
  std::string request = "GET /proxy-stats HTTP/1.1\r\nX-Slow: ";
  request.append(150, 'x').append("\r\n\r\n");
  const std::size_t sent = trickle_until_answered(trickler.fd(), request, 50ms);
  EXPECT_LT(sent, request.size());
  auto cut = trickler.response();
  EXPECT_EQ(cut.status, 408);
  EXPECT_FALSE(cut.keep_alive);
  EXPECT_EQ(cut.body, "no complete request within the proxy's idle timeout\n");
  EXPECT_EQ(trickler.response().status, 0);  // closed
  EXPECT_EQ(idle.response().status, 0);      // closed, with nothing said
  raw_client next(srv.port());  // both slots are free again
  next.send_raw(get("/proxy-stats"));
  auto stats = next.response();
  EXPECT_EQ(stats.status, 200);
  EXPECT_NE(stats.body.find("\"timed_out_connections\": 2,"), std::string::npos) << stats.body;
  srv.stop();
  EXPECT_EQ(srv.counters().refused_connections, 0u);
}

TEST(ProxyServer, BadOptionsAreRefusedByName) {
  promptly::runtime rt{config("aps")};
  proxy::server_options opt;
  opt.max_connections = 0;
  EXPECT_EQ(what_of<std::invalid_argument>([&] { proxy::server s(rt, opt); }),
            "proxy::server_options: max_connections must be at least 1");
  opt.max_connections = 1;
  opt.idle_timeout = std::chrono::milliseconds(-1);
  EXPECT_EQ(what_of<std::invalid_argument>([&] { proxy::server s(rt, opt); }),
            "proxy::server_options: idle_timeout must not be negative (0: no limit)");
}

// A proxy that stamps its answers with a clock other than this machine's CLOCK_MONOTONIC (one on
// another machine, say): the driver cannot measure resp from such a stamp, and must say so by
// name rather than record a wrong latency. The fake serves one keep-alive connection at a time,
// answering every GET for /site/<i> with that site's page and the given stamp (none if 0).
TEST(ProxyDriver, AReactionStampOffThisMachinesClockFailsTheRunByName) {
  watchdog guard(hang_guard, "ProxyDriver.AReactionStampOffThisMachinesClockFailsTheRunByName");
  for (const std::int64_t stamp : {std::int64_t{1}, std::int64_t{0}}) {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listener, 4), 0);
    ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
    std::jthread fake([listener, stamp] {
      for (int conn = 0; conn < 2; ++conn) {  // the client's connection, then the driver's stats request
        const int c = ::accept(listener, nullptr, nullptr);
        if (c < 0) return;
        proxy::http_stream in(HTTP_REQUEST, 1 << 16);
        std::string pending;
        char buf[4096];
        for (;;) {
          while (!in.complete() && !pending.empty()) pending.erase(0, in.feed(pending.data(), pending.size()));
          if (!in.complete()) {
            const ssize_t n = ::recv(c, buf, sizeof buf, 0);
            if (n <= 0) break;
            pending.append(buf, static_cast<std::size_t>(n));
            continue;
          }
          const auto m = in.take();
          const auto at = m.url.find("/site/");
          const auto site = at == std::string::npos ? std::nullopt : proxy::site_of_path(m.url.substr(at));
          const std::string body = site ? proxy::site_body(*site) : "{}";
          const std::string r = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\nX-Cache: HIT\r\n" +
                                (stamp ? "X-Reacted-At-Ns: " + std::to_string(stamp) + "\r\n" : "") + "\r\n" + body;
          if (::send(c, r.data(), r.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(r.size())) break;
        }
        ::close(c);
      }
    });
    proxy::driver_options o;
    o.proxy_port = ntohs(a.sin_port);
    o.origin_port = 1;  // never contacted: the fake answers from the pages themselves
    o.clients = 1;
    o.requests = 3;
    const auto r = proxy::run_driver(o);
    fake.join();
    ::close(listener);
    EXPECT_EQ(r.answered, 3u);
    EXPECT_EQ(r.hit_us.size(), 3u) << "the pages themselves were right";
    EXPECT_TRUE(r.resp_us.empty()) << "no resp is recorded from a stamp it cannot read";
    EXPECT_EQ(r.failure_count, 3u);
    ASSERT_FALSE(r.failures.empty());
    if (stamp)
      EXPECT_NE(r.failures[0].find("X-Reacted-At-Ns 1 is not between the send"), std::string::npos) << r.failures[0];
    else
      EXPECT_NE(r.failures[0].find("no X-Reacted-At-Ns header"), std::string::npos) << r.failures[0];
  }
}

class ProxyPolicies : public ::testing::TestWithParam<const char*> {};

TEST_P(ProxyPolicies, DriverChecksPassAndEveryRequestIsAnswered) {
  watchdog guard(driver_hang_guard, "ProxyPolicies.DriverChecksPassAndEveryRequestIsAnswered");
  proxy::origin_server origin;
  promptly::runtime rt{config(GetParam())};
  proxy::server_options opt;
  opt.cache_bytes = 1 << 20;  // about 120 pages: evictions happen
  opt.resize_period = std::chrono::milliseconds(1);
  opt.stats_period = std::chrono::milliseconds(1);
  proxy::server srv(rt, opt);
  proxy::driver_options o;
  o.proxy_port = srv.port();
  o.origin_port = origin.port();
  o.clients = 4;
  o.requests = scaled(300, 5);
  const auto r = proxy::run_driver(o);
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.answered, o.clients * o.requests);
  EXPECT_EQ(r.hit_us.size() + r.miss_us.size(), r.answered);
  EXPECT_EQ(r.resp_us.size(), r.answered);  // each answer carried a reaction stamp in range
  EXPECT_EQ(r.first_byte_us.size(), r.answered);
  srv.stop();
  const auto k = srv.counters();
  EXPECT_EQ(k.hits + k.misses, r.answered);
  EXPECT_EQ(k.misses, origin.served());
  EXPECT_EQ(k.errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(Policies, ProxyPolicies, ::testing::Values("aps", "prompt", "fair", "oblivious"));

}  // namespace
