// promptlyd under clients that push its limits, end to end (docs/server.md,
// "Limits", "SIGTERM: draining", "Metrics and health"): big replies held
// behind a waiting one stay within the documented bounds (the daemon stops
// reading instead of growing); SIGTERM answers every request the kernel
// already held, connections still in the listen backlog included, and
// closes without a reset; an exiting daemon leaves a successor's socket
// alone; clients that never finish their HTTP headers cannot keep /healthz
// from answering. Every wait is on a reply, a metric, /proc or the child's
// exit, never a sleep.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_support.hpp"
#include "server/daemon/client.hpp"
#include "server/daemon/socket.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using nlohmann::json;
using promptly::server::daemon::client;
using promptly::server::daemon::endpoint;

namespace {

constexpr bool sanitized = PROMPTLY_UNDER_ASAN || PROMPTLY_UNDER_TSAN;
// The front end's documented bounds (docs/server.md, "Limits").
constexpr double max_unsent_bytes = 8 << 20;
constexpr double max_line_bytes = 1 << 20;

// Resident memory of a process in KiB (/proc/<pid>/status VmRSS), or -1.
long vm_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// Sockets a process holds open (/proc/<pid>/fd), to see connections accepted.
int open_sockets(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code lec;
    const auto target = std::filesystem::read_symlink(e.path(), lec);
    if (!lec && target.string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

// Whether a connect to the daemon's socket is refused: its listener is closed.
bool connect_refused(const endpoint& ep) {
  try {
    client probe(ep);
    return false;
  } catch (const std::exception&) {
    return true;
  }
}

// host:port of the metrics endpoint from the daemon's "metrics http://HOST:PORT/metrics" line.
std::string metrics_host_port(const daemon_process& d) {
  const std::string url = d.line_value("metrics");
  return url.substr(7, url.find('/', 7) - 7);
}

class DaemonRobustness : public ::testing::Test {
 protected:
  temp_dir dir_;
  std::string sock_ = dir_.path + "/promptlyd.sock";
  watchdog dog_{std::chrono::seconds(sanitized ? 280 : 120), "server_daemon_robustness_test"};

  std::vector<std::string> base_args(std::vector<std::string> more = {}) const {
    std::vector<std::string> a{"--socket", sock_, "--workers", "1"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  endpoint ep() const { return endpoint{sock_, "", ""}; }
};

// A request whose reply is about 1 MB: a version request with a big tag.
std::string big_request(int i) {
  static const std::string filler(1'000'000 - 64, 'x');
  return json{{"op", "version"}, {"tag", std::to_string(i) + ":" + filler}}.dump() + "\n";
}
int tag_index(const json& r) { return std::stoi(r.at("tag").get<std::string>()); }

// Replies ready behind a waiting reply count toward the connection's bounds:
// the daemon stops reading a client that pipelines 1 MB replies behind a
// wait (it held every one of them before, growing linearly), and once the
// wait is answered every reply arrives, in order.
TEST_F(DaemonRobustness, RepliesHeldBehindAWaitingReplyStayWithinTheBounds) {
  daemon_process d(base_args({"--metrics", "127.0.0.1:0"}));
  ASSERT_TRUE(d.ready());
  const std::string metrics = metrics_host_port(d);
  client ctl(ep()), cl(ep());
  const json job = ctl.call({{"op", "submit"}, {"program", "bing"}, {"args", {{"work_ms", 10000}}}});
  ASSERT_TRUE(job["ok"].get<bool>()) << job;
  cl.send({{"op", "wait"}, {"id", job["id"]}});  // holds back every reply behind it
  const long rss_before = vm_rss_kib(d.pid());
  const int n = sanitized ? 12 : 24;
  std::atomic<int> sent{0};
  std::thread sender([&] {
    for (int i = 0; i < n; ++i) {
      cl.send_raw(big_request(i));
      sent.fetch_add(1);
    }
  });
  // Either the daemon stops reading the client (bounded) or it reads all n.
  double paused = -1;
  ASSERT_TRUE(wait_until([&] {
    paused = metric(http_get(metrics, "/metrics").second, "promptly_connections_reading_paused");
    return paused >= 1 || sent.load() == n;
  }));
  const std::string text = http_get(metrics, "/metrics").second;
  const double buffered = metric(text, "promptly_connection_buffered_bytes");
  const long rss_growth_kib = vm_rss_kib(d.pid()) - rss_before;
  EXPECT_LT(sent.load(), n) << "the daemon read every request";
  // The sanitizers' quarantine keeps freed memory resident: RSS means nothing there.
  if (!sanitized) EXPECT_LT(rss_growth_kib, 20 << 10) << "the daemon grew by " << rss_growth_kib << " KiB";
  EXPECT_EQ(paused, 1);
  // At the bound, beyond it by at most the replies of one read.
  EXPECT_GE(buffered, max_unsent_bytes);
  EXPECT_LE(buffered, max_unsent_bytes + 2 * max_line_bytes);
  // Backpressure, not loss: once the wait is answered, every reply comes, in order.
  EXPECT_TRUE(ctl.call({{"op", "cancel"}, {"id", job["id"]}})["ok"].get<bool>());
  EXPECT_EQ(cl.receive()["state"], "cancelled");
  for (int i = 0; i < n; ++i) {
    const auto line = cl.receive_line();
    ASSERT_TRUE(line.has_value()) << "reply " << i;
    ASSERT_EQ(tag_index(json::parse(*line)), i);
  }
  sender.join();
  EXPECT_EQ(metric(http_get(metrics, "/metrics").second, "promptly_connections_reading_paused"), 0);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

// A client pipelines past its bounds behind a waiting reply (so the daemon
// stops reading it), then sends 3000 more requests, which the kernel holds,
// and half-closes; then SIGTERM, and the client reads only once the drain's
// final step has begun. Every request sent before the signal gets its
// reply, then the daemon closes cleanly (end of stream, no reset).
TEST_F(DaemonRobustness, SigtermAnswersTheRequestsTheKernelHeld) {
  // A flush timeout far beyond the test's needs: the sanitizer builds on a loaded machine
  // take seconds to move the 9 MB.
  daemon_process d(base_args({"--metrics", "127.0.0.1:0", "--drain-timeout", "0", "--flush-timeout", "120"}));
  ASSERT_TRUE(d.ready());
  const std::string metrics = metrics_host_port(d);
  client ctl(ep()), cl(ep());
  const json job = ctl.call({{"op", "submit"}, {"program", "bing"}, {"args", {{"work_ms", 10000}}}});
  ASSERT_TRUE(job["ok"].get<bool>()) << job;
  cl.send({{"op", "wait"}, {"id", job["id"]}});
  // 9 replies of 1 MB behind the wait pass the 8 MiB bound only with the last one.
  const int big = 9;
  for (int i = 0; i < big; ++i) cl.send_raw(big_request(i));
  ASSERT_TRUE(wait_until(
      [&] { return metric(http_get(metrics, "/metrics").second, "promptly_connections_reading_paused") >= 1; }));
  const int small = 3000;
  std::string batch;
  for (int i = 0; i < small; ++i) batch += json{{"op", "version"}, {"tag", std::to_string(big + i)}}.dump() + "\n";
  cl.send_raw(batch);  // about 90 KB: the kernel takes it all without the daemon reading
  cl.shutdown_write();
  d.signal(SIGTERM);
  // The drain's final step has begun when the listener is closed (a connect
  // is refused); until then the client reads nothing, so the daemon, still
  // over its bound, cannot have read the 3000 requests before that step.
  ASSERT_TRUE(wait_until([&] { return connect_refused(ep()); }));
  EXPECT_EQ(cl.receive()["state"], "cancelled");  // --drain-timeout 0 cancels the job
  int got = 0;
  try {
    while (auto line = cl.receive_line()) {
      const json r = json::parse(*line);
      ASSERT_TRUE(r["ok"].get<bool>()) << r.dump().substr(0, 300);
      ASSERT_EQ(tag_index(r), got);
      ++got;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "after " << got << " replies: " << e.what();
  }
  EXPECT_EQ(got, big + small);
  EXPECT_EQ(d.wait_exit(), 0);
}

// Connections still in the listen backlog when SIGTERM arrives (the daemon
// is stopped while they connect, send a request and half-close) are
// accepted and answered, not reset.
TEST_F(DaemonRobustness, SigtermAnswersConnectionsInTheListenBacklog) {
  daemon_process d(base_args());
  ASSERT_TRUE(d.ready());
  {
    client warm(ep());  // the daemon serves before it is stopped
    ASSERT_TRUE(warm.call({{"op", "version"}})["ok"].get<bool>());
  }
  d.signal(SIGSTOP);
  std::vector<client> waiting;
  const int n = 64;
  for (int i = 0; i < n; ++i) {
    waiting.emplace_back(ep());  // a Unix connect completes in the backlog
    waiting.back().send({{"op", "version"}, {"tag", i}});
    waiting.back().send({{"op", "status"}, {"id", 1u << 30}, {"tag", i}});
    waiting.back().shutdown_write();
  }
  d.signal(SIGTERM);
  d.signal(SIGCONT);
  for (int i = 0; i < n; ++i) {
    try {
      const json v = waiting[i].receive();
      EXPECT_TRUE(v["ok"].get<bool>()) << v;
      EXPECT_EQ(v["tag"], i);
      const json s = waiting[i].receive();
      EXPECT_EQ(code_of(s), "unknown_job") << s;
      EXPECT_FALSE(waiting[i].receive_line().has_value());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "connection " << i << ": " << e.what();
    }
  }
  EXPECT_EQ(d.wait_exit(), 0);
}

// Daemon A drains (its listener closed, a slow reader still to be served)
// when daemon B starts on the same path: A's exit leaves B's socket.
TEST_F(DaemonRobustness, AnExitingDaemonLeavesItsSuccessorsSocket) {
  auto a = std::make_unique<daemon_process>(base_args());
  ASSERT_TRUE(a->ready());
  auto slow = std::make_unique<client>(ep());
  slow->send_raw(big_request(0));  // a 1 MB reply it does not read yet
  pollfd replying{slow->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&replying, 1, 30'000), 1);  // A has read the request and is replying
  a->signal(SIGTERM);
  // A has closed its listener when a connect is refused.
  ASSERT_TRUE(wait_until([&] { return connect_refused(ep()); }));
  daemon_process b(base_args());
  ASSERT_TRUE(b.ready());
  EXPECT_EQ(tag_index(slow->receive()), 0);  // A's last reply; A may exit now
  EXPECT_FALSE(slow->receive_line().has_value());
  slow.reset();
  EXPECT_EQ(a->wait_exit(), 0);
  struct stat st{};
  ASSERT_EQ(::lstat(sock_.c_str(), &st), 0) << "A removed B's socket";
  client cl(ep());
  EXPECT_TRUE(cl.call({{"op", "version"}})["ok"].get<bool>());
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait_exit(), 0);
  EXPECT_NE(::access(sock_.c_str(), F_OK), 0);  // B removes its own
}

// An HTTP GET with a receive deadline: the status, or 0 if nothing came in time.
int http_status_within(const std::string& host_port, const std::string& path, std::chrono::milliseconds limit) {
  const auto hp = promptly::server::daemon::parse_host_port(host_port);
  client c(promptly::server::daemon::connect_tcp(hp.host, hp.port));
  c.send_raw("GET " + path + " HTTP/1.1\r\nHost: " + host_port + "\r\nConnection: close\r\n\r\n");
  pollfd p{c.fd(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) return 0;
  const auto line = c.receive_line();
  return line && line->size() >= 12 ? std::stoi(line->substr(9, 3)) : 0;
}

// Slow-header clients (more than the endpoint's threads, each sending a
// header byte every 100 ms and never the end of its headers) do not keep
// /healthz from answering: they are dropped at their request deadline.
TEST_F(DaemonRobustness, HealthzAnswersBesideClientsThatNeverFinishTheirHeaders) {
  daemon_process d(base_args({"--metrics", "127.0.0.1:0"}));
  ASSERT_TRUE(d.ready());
  const std::string metrics = metrics_host_port(d);
  const auto hp = promptly::server::daemon::parse_host_port(metrics);
  const int sockets_before = open_sockets(d.pid());  // the listeners
  ASSERT_EQ(http_get(metrics, "/healthz").first, 200);
  const int n = 40;  // more than the endpoint's 32 threads
  std::vector<client> slow;
  for (int i = 0; i < n; ++i) {
    slow.emplace_back(promptly::server::daemon::connect_tcp(hp.host, hp.port));
    const std::string head = "GET /healthz HTTP/1.1\r\n";
    ASSERT_EQ(::send(slow.back().fd(), head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  }
  // The daemon has accepted them all: each is open in the daemon or was
  // already dropped by it (the client sees the end of the connection).
  ASSERT_TRUE(wait_until([&] {
    int dropped = 0;
    for (auto& c : slow) {
      pollfd p{c.fd(), POLLIN, 0};
      dropped += ::poll(&p, 1, 0) > 0 ? 1 : 0;
    }
    return open_sockets(d.pid()) + dropped >= sockets_before + n;
  }));
  std::atomic<bool> probed{false};
  std::thread trickler([&] {
    // The attack's pace, not a synchronisation: one header byte per client
    // every 100 ms (errors ignored: the daemon may have dropped them).
    while (!probed.load()) {
      for (auto& c : slow) (void)::send(c.fd(), "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      pollfd none{-1, 0, 0};
      (void)::poll(&none, 1, 100);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const int status = http_status_within(metrics, "/healthz", std::chrono::seconds(5));
  const auto took = std::chrono::steady_clock::now() - t0;
  probed.store(true);
  trickler.join();
  EXPECT_EQ(status, 200);
  EXPECT_LT(took, std::chrono::seconds(2)) << std::chrono::duration<double>(took).count() << " s";
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

}  // namespace
