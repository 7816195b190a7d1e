// promptlyd's HTTP endpoint under a flood of connections (docs/server.md,
// "HTTP API", "Connections"): ten thousand connections on loopback, half
// sending nothing and half stuck in their headers (Slowloris), while a fresh
// client asks for /healthz and submits a job and malformed, unauthorised and
// oversized requests arrive. The daemon must answer the fresh client at
// once, give the connections beyond its documented bound a 503 (not
// silence), and, once the flood closes, hold no more descriptors or
// connections than before it. Every wait is on a reply, a close or a gauge,
// bounded by receive timeouts and wait_until.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "daemon_support.hpp"
#include "server_http_support.hpp"
#include "test_support.hpp"

namespace {

const std::string token = "http-abuse-test-token-0123456789";

// Connections that wait for their request's headers without a thread, at
// most (docs/server.md, "Connections"); beyond, the one waiting longest gets
// a 503 and is closed.
constexpr std::size_t waiting_bound = 1024;

// Raises the soft RLIMIT_NOFILE to the hard limit (the daemon, a child,
// inherits it) and returns it.
rlim_t raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  lim.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  return lim.rlim_max;
}

std::size_t open_fds(pid_t pid) {
  std::error_code ec;
  std::size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// The inodes of pid's sockets.
std::set<std::string> socket_inodes(pid_t pid) {
  std::error_code ec;
  std::set<std::string> out;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string target = std::filesystem::read_symlink(it->path(), ec).string();
    if (target.rfind("socket:", 0) == 0) out.insert(target);
  }
  return out;
}

// What pid's descriptors refer to ("socket:[inode]", paths), for a failure's message.
std::string fd_targets(pid_t pid) {
  std::error_code ec;
  std::string out;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    out += it->path().filename().string() + "->" + std::filesystem::read_symlink(it->path(), ec).string() + " ";
  return out;
}

// A connection to 127.0.0.1:port whose connect, sends and receives each give
// up after 5 s (a full listen backlog would otherwise hold connect() for SYN
// retransmissions); -1 if it fails.
int connect_bounded(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

double http_metric(const std::string& h, const std::string& name) { return metric(http_get(h, "/metrics").second, name); }

TEST(HttpAbuse, TenThousandConnectionsLeaveTheDaemonServingAndTheExcessGet503) {
  // 2,000 under the sanitizers: still twice the bound, so the refusals happen.
  const std::size_t n = under_tsan || under_asan ? 2000 : 10000;
  const rlim_t need = n + 1024;  // the flood, plus the test's own and the daemon's descriptors
  const rlim_t limit = raise_fd_limit();
  if (limit < need)
    GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << limit << " is below the " << need
                 << " descriptors this test needs for " << n << " connections (raise it with ulimit -Hn)";

  temp_dir dir;
  const std::string token_file = dir.path + "/token";
  std::ofstream(token_file) << token << "\n";
  ::chmod(token_file.c_str(), 0600);
  // A 30 s request timeout: a connection that held a thread while it waits
  // for its request would hold it past every bound below, so the test fails
  // rather than passes by the timeout's luck.
  daemon_process d({"--socket", dir.path + "/d.sock", "--workers", "1", "--http", "127.0.0.1:0", "--token-file",
                    token_file, "--http-request-timeout", "30", "--max-body", "1024"});
  ASSERT_TRUE(d.ready());
  const std::string url = d.line_value("listening http");
  const std::string h = url.substr(url.find("://") + 3);
  const auto port = promptly::server::daemon::parse_host_port(h).port;
  // What the daemon holds with no connection open: its listening sockets
  // (all there before "ready") and, once it has served one request, what
  // its endpoint makes then (the poller threads' epoll and eventfd).
  const auto listeners = socket_inodes(d.pid());
  ASSERT_EQ(http_call(h, "GET", "/healthz", "").status, 200);
  ASSERT_TRUE(wait_until([&] { return socket_inodes(d.pid()) == listeners; }, std::chrono::seconds(10)));
  const std::size_t base_fds = open_fds(d.pid());

  // The flood: even connections send nothing, odd ones half a header.
  struct descriptors : std::vector<int> {
    ~descriptors() {
      for (const int fd : *this) ::close(fd);
    }
  } flood;
  flood.reserve(n);
  const std::string partial = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    const int fd = connect_bounded(port);
    ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
    flood.push_back(fd);
    if (i % 2 == 1) (void)::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
  }
  const double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // While they are open: a fresh client is served, bad requests get their codes.
  auto t = std::chrono::steady_clock::now();
  const auto health = http_call(h, "GET", "/healthz", "", "", std::chrono::seconds(5));
  const double health_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  EXPECT_EQ(health.status, 200) << "/healthz beside " << n << " connections (" << health_s << " s)";
  t = std::chrono::steady_clock::now();
  const auto job = http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":10},"wait":true})",
                             std::chrono::seconds(5));
  const double job_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  ASSERT_EQ(job.status, 200) << "submit+wait beside " << n << " connections (" << job_s << " s)";
  EXPECT_EQ(nlohmann::json::parse(job.body)["result"], 55);
  const auto timeout = std::chrono::seconds(5);
  EXPECT_EQ(http_raw(h, "GARBAGE\r\n\r\n", timeout).status, 400);
  EXPECT_EQ(http_call(h, "GET", "/v1/stats", "wrong-token", "", timeout).status, 401);
  const std::string big = R"({"program":"fib","args":{"n":3},"tag":")" + std::string(4096, 'x') + "\"}";
  EXPECT_EQ(http_call(h, "POST", "/v1/jobs", token, big, timeout).status, 413);

  // Every connection beyond the bound is answered: a 503 with Retry-After,
  // then the close.
  std::vector<bool> answered(n, false);
  std::size_t refused = 0, other = 0;
  std::string other_sample;
  std::vector<pollfd> pfds(n);
  const bool all_answered = wait_until(
      [&] {
        for (std::size_t i = 0; i < n; ++i) pfds[i] = {answered[i] ? -1 : flood[i], POLLIN, 0};
        if (::poll(pfds.data(), pfds.size(), 100) <= 0) return refused + other >= n - waiting_bound;
        for (std::size_t i = 0; i < n; ++i) {
          if (answered[i] || pfds[i].revents == 0) continue;
          answered[i] = true;
          char buf[512];
          const ssize_t k = ::recv(flood[i], buf, sizeof buf, MSG_DONTWAIT);
          const std::string reply(buf, k > 0 ? static_cast<std::size_t>(k) : 0);
          if (reply.rfind("HTTP/1.1 503 ", 0) == 0 && reply.find("\r\nRetry-After: 1\r\n") != std::string::npos &&
              reply.find("\r\nConnection: close\r\n") != std::string::npos)
            ++refused;
          else if (++other == 1)
            other_sample = k >= 0 ? "\"" + reply + "\"" : std::string("error: ") + std::strerror(errno);
        }
        return refused + other >= n - waiting_bound;
      },
      std::chrono::seconds(20));
  EXPECT_TRUE(all_answered) << refused + other << " of " << n << " connections answered, at least "
                            << n - waiting_bound << " expected";
  EXPECT_EQ(other, 0u) << "connections closed without a 503, e.g. " << other_sample;
  EXPECT_GE(http_metric(h, "promptly_http_connections_refused_total"), static_cast<double>(refused));

  // The connections still waiting are still served once their headers end.
  int finished = 0;
  for (std::size_t i = n; i-- > 0 && finished < 4;) {
    if (answered[i] || i % 2 == 0) continue;
    const std::string rest = "1\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(::send(flood[i], rest.data(), rest.size(), MSG_NOSIGNAL), static_cast<ssize_t>(rest.size()));
    char buf[512];
    const ssize_t k = ::recv(flood[i], buf, sizeof buf, 0);  // within the 5 s receive timeout
    ASSERT_GT(k, 12) << "slow client " << i << " got no reply once its headers ended";
    EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 200");
    ++finished;
  }

  // The flood leaves: the daemon's descriptors and connection gauge return
  // to what they were (the gauge counts the scrape's own connection).
  for (const int fd : flood) ::close(fd);
  flood.clear();
  EXPECT_TRUE(wait_until([&] { return open_fds(d.pid()) == base_fds; }, std::chrono::seconds(10)))
      << open_fds(d.pid()) << " descriptors, " << base_fds << " before the flood: " << fd_targets(d.pid());
  EXPECT_TRUE(wait_until([&] { return http_metric(h, "promptly_http_connections") == 1; }, std::chrono::seconds(10)))
      << http_metric(h, "promptly_http_connections") << " HTTP connections open after the flood";
  std::printf("%zu connections opened in %.2f s; /healthz %.3f s, submit+wait %.3f s beside them; %zu got 503\n", n,
              open_s, health_s, job_s, refused);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST(HttpAbuse, AHeadThatStopsHalfWayGets408AtTheRequestTimeout) {
  temp_dir dir;
  const std::string token_file = dir.path + "/token";
  std::ofstream(token_file) << token << "\n";
  ::chmod(token_file.c_str(), 0600);
  daemon_process d({"--socket", dir.path + "/d.sock", "--workers", "1", "--http", "127.0.0.1:0", "--token-file",
                    token_file, "--http-request-timeout", "0.2"});
  ASSERT_TRUE(d.ready());
  const std::string url = d.line_value("listening http");
  const std::string h = url.substr(url.find("://") + 3);
  http_connection slow(h, std::chrono::seconds(10));
  ASSERT_TRUE(slow.send("GET /v1/stats HTTP/1.1\r\nHost: x\r\n"));
  const auto r = slow.receive();  // the 408 comes after 0.2 s, well within the 10 s receive timeout
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(slow.closed_by_server());
  EXPECT_EQ(http_metric(h, "promptly_http_requests_timed_out_total"), 1);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

}  // namespace
