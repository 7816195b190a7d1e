// promptlyd end to end (docs/server.md): the daemon runs as a child process
// on a Unix socket in a private temporary directory; clients talk protocol
// version 1 to it. Pipelined mixed jobs from 8 clients with checked results
// and exactly one terminal state per id; 10^5 requests on one connection;
// malformed input and half-closed sockets; a client leaving while its jobs
// run; SIGTERM with 50 queued long jobs; tokens on TCP; socket mode 0600;
// the metrics and health endpoints. Every wait is on a reply, a pipe or the
// child's exit, never a sleep.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_support.hpp"
#include "server/daemon/client.hpp"
#include "sched/os_time_slice.hpp"
#include "sched/toolchain.hpp"
#include "server/daemon/socket.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using nlohmann::json;
using promptly::server::daemon::client;
using promptly::server::daemon::endpoint;

namespace {

constexpr bool sanitized = PROMPTLY_UNDER_ASAN || PROMPTLY_UNDER_TSAN;

// Release does the full counts; the sanitizer builds a tenth.
constexpr int scaled(int n) { return sanitized ? n / 10 : n; }

long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

class Daemon : public ::testing::Test {
 protected:
  temp_dir dir_;
  std::string sock_ = dir_.path + "/promptlyd.sock";
  watchdog dog_{std::chrono::seconds(sanitized ? 280 : 120), "server_daemon_test"};

  std::vector<std::string> base_args(std::vector<std::string> more = {}) const {
    std::vector<std::string> a{"--socket", sock_, "--workers", "2"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  endpoint ep() const { return endpoint{sock_, "", ""}; }
};

TEST_F(Daemon, EightClientsPipelineMixedJobs) {
  daemon_process d(base_args({"--max-queued", "100000", "--max-running", "64"}));
  ASSERT_TRUE(d.ready());
  const int clients = 8, per_client = scaled(10000) / clients;
  const std::map<int, long> queens{{1, 1}, {2, 0}, {3, 0}, {4, 2}, {5, 10}, {6, 4}, {7, 40}, {8, 92}};
  std::mutex mu;
  std::map<std::uint64_t, std::string> state_by_id;  // every id, exactly once
  std::vector<std::string> problems;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      client cl(ep());
      // Request i of client c and its expected result, computed on both
      // sides (the sender and the reply checker share nothing but the socket).
      auto make = [&](int i) {
        const int kind = (i + c) % 4, k = (i * 7 + c) % 8;
        json req{{"op", "submit"}, {"wait", true}, {"tag", i}};
        json want;
        if (kind == 0) {
          req["program"] = "fib";
          req["args"] = {{"n", 10 + k}};
          want = fib(10 + k);
        } else if (kind == 1) {
          req["program"] = "nqueens";
          req["args"] = {{"n", k + 1}};
          want = {{"n", k + 1}, {"solutions", queens.at(k + 1)}};
        } else if (kind == 2) {
          req["program"] = "cilksort";
          req["args"] = {{"n", 100 + 37 * k}, {"seed", i}};
          want = "sorted";
        } else {
          req["program"] = "matmul";
          req["args"] = {{"n", 1 << (k % 4 + 1)}};
          want = "verified";
        }
        return std::pair{req, want};
      };
      std::thread sender([&] {
        for (int i = 0; i < per_client; ++i) cl.send(make(i).first);
      });
      std::vector<std::string> local_problems;
      std::vector<std::pair<std::uint64_t, std::string>> seen;
      for (int i = 0; i < per_client; ++i) {
        const json r = cl.receive();
        if (r.value("tag", -1) != i) local_problems.push_back("client " + std::to_string(c) + ": reply out of order: " + r.dump());
        if (!r.value("ok", false) || r.value("state", "") != "done") {
          local_problems.push_back("not done: " + r.dump());
          continue;
        }
        const json want = make(i).second;
        const json& got = r["result"];
        bool ok;
        if (want == "sorted") ok = got.value("sorted", false);
        else if (want == "verified") ok = got.value("verified", false);
        else if (want.is_object()) ok = got.value("solutions", -1L) == want["solutions"].get<long>();
        else ok = got == want;
        if (!ok) local_problems.push_back("wrong result " + r.dump() + ", expected " + want.dump());
        seen.emplace_back(r["id"].get<std::uint64_t>(), r["state"].get<std::string>());
      }
      sender.join();
      std::lock_guard lock(mu);
      problems.insert(problems.end(), local_problems.begin(), local_problems.end());
      for (const auto& [id, st] : seen)
        if (!state_by_id.emplace(id, st).second) problems.push_back("id " + std::to_string(id) + " replied twice");
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < std::min<std::size_t>(problems.size(), 10); ++i) ADD_FAILURE() << problems[i];
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems";
  EXPECT_EQ(state_by_id.size(), static_cast<std::size_t>(clients * per_client));
  // Each id is in exactly one terminal state, also when asked again (pipelined).
  client cl(ep());
  std::thread sender([&] {
    for (const auto& [id, st] : state_by_id) cl.send({{"op", "status"}, {"id", id}});
  });
  for (const auto& [id, st] : state_by_id) {
    const json r = cl.receive();
    ASSERT_EQ(r["id"], id);
    ASSERT_EQ(r["state"], st);
  }
  sender.join();
  const json s = cl.call({{"op", "stats"}});
  EXPECT_EQ(s["submitted"], clients * per_client);
  EXPECT_EQ(s["done"], clients * per_client);
  EXPECT_EQ(s["rejected"], 0);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

// The daemon's connection bounds exceed the common soft descriptor limit (1024): it raises its
// soft limit to the hard one at start-up, as Go does.
TEST_F(Daemon, RaisesItsDescriptorSoftLimitToTheHardLimit) {
  rlimit mine{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &mine), 0);
  if (mine.rlim_max != RLIM_INFINITY && mine.rlim_max <= 256) GTEST_SKIP() << "hard descriptor limit " << mine.rlim_max;
  rlimit low = mine;
  low.rlim_cur = 256;  // the daemon inherits this
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::optional<daemon_process> d;
  try {
    d.emplace(base_args());
  } catch (...) {
    ::setrlimit(RLIMIT_NOFILE, &mine);
    throw;
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &mine), 0);
  ASSERT_TRUE(d->ready());
  std::ifstream limits("/proc/" + std::to_string(d->pid()) + "/limits");
  std::string line;
  std::string soft;
  while (std::getline(limits, line))
    if (line.rfind("Max open files", 0) == 0) {
      std::istringstream fields(line.substr(std::string("Max open files").size()));
      fields >> soft;
    }
  const std::string want = mine.rlim_max == RLIM_INFINITY ? std::to_string(1 << 20) : std::to_string(mine.rlim_max);
  EXPECT_EQ(soft, want) << "the daemon's descriptor soft limit";
}

TEST_F(Daemon, HundredThousandRequestsOnOneConnection) {
  daemon_process d(base_args());
  ASSERT_TRUE(d.ready());
  const int n = scaled(100000);
  client cl(ep());
  std::thread sender([&] {
    std::string batch;
    for (int i = 0; i < n; ++i) {
      batch += i % 3 == 0   ? json{{"op", "version"}, {"tag", i}}.dump()
               : i % 3 == 1 ? json{{"op", "status"}, {"id", 1u << 30}, {"tag", i}}.dump()
                            : json{{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 5}}}, {"tag", i}}.dump();
      batch += '\n';
      if (batch.size() > 60000) {
        cl.send_raw(batch);
        batch.clear();
      }
    }
    cl.send_raw(batch);
    cl.shutdown_write();
  });
  int got = 0, wrong = 0;
  while (auto line = cl.receive_line()) {
    const json r = json::parse(*line);
    // Fire-and-forget submits beyond the admission limits are rejected, never lost.
    const bool right = r["tag"] == got && (got % 3 == 0   ? r["ok"].get<bool>()
                                           : got % 3 == 1 ? code_of(r) == "unknown_job"
                                                          : r["ok"].get<bool>() || code_of(r) == "rejected");
    if (!right && wrong++ < 5) ADD_FAILURE() << "reply " << got << ": " << r;
    ++got;
  }
  sender.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(got, n);  // then the server closed the half-closed connection
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Daemon, MalformedInputAndHalfClosedSockets) {
  daemon_process d(base_args());
  ASSERT_TRUE(d.ready());
  {
    client cl(ep());
    cl.send_raw(std::string(2 << 20, 'x') + "\n");
    EXPECT_EQ(code_of(cl.receive()), "bad_request");
    cl.send_raw("{not json\n[1]\n{\"op\":\"nope\"}\n{\"op\":\"submit\",\"program\":\"fib\",\"args\":{\"n\":\"ten\"}}\n"
                "{\"op\":\"submit\",\"program\":\"cilksort\",\"args\":{\"n\":-3}}\n{\"op\":\"submit\",\"program\":\"x\"}\n");
    EXPECT_EQ(code_of(cl.receive()), "bad_request");
    EXPECT_EQ(code_of(cl.receive()), "bad_request");
    EXPECT_EQ(code_of(cl.receive()), "unknown_op");
    EXPECT_EQ(code_of(cl.receive()), "bad_args");
    EXPECT_EQ(code_of(cl.receive()), "bad_args");
    EXPECT_EQ(code_of(cl.receive()), "unknown_program");
    // A truncated last line, then half-close: a reply for it, then the server closes.
    cl.send_raw("{\"op\":\"version\"}\n{\"op\":\"vers");
    cl.shutdown_write();
    EXPECT_TRUE(cl.receive()["ok"].get<bool>());
    EXPECT_NE(cl.receive()["error"]["message"].get<std::string>().find("truncated"), std::string::npos);
    EXPECT_FALSE(cl.receive_line().has_value());
  }
  {
    // Half-closed after waiting submits: every reply still comes.
    client cl(ep());
    for (int i = 0; i < 10; ++i) cl.send({{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 18 + i % 3}}}, {"wait", true}});
    cl.shutdown_write();
    for (int i = 0; i < 10; ++i) EXPECT_EQ(cl.receive()["state"], "done");
    EXPECT_FALSE(cl.receive_line().has_value());
  }
  // The server is fine.
  client cl(ep());
  EXPECT_TRUE(cl.call({{"op", "stats"}})["ok"].get<bool>());
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Daemon, ClientDisconnectingWhileItsJobsRun) {
  daemon_process d(base_args());
  ASSERT_TRUE(d.ready());
  std::vector<std::uint64_t> ids;
  {
    client gone(ep());
    for (int i = 0; i < 4; ++i) {
      const json r = gone.call({{"op", "submit"}, {"program", "bing"}, {"args", {{"work_ms", 30}, {"seed", i}}}});
      ASSERT_TRUE(r["ok"].get<bool>()) << r;
      ids.push_back(r["id"].get<std::uint64_t>());
    }
    for (const auto id : ids) gone.send({{"op", "wait"}, {"id", id}});
  }  // closed with waits pending
  client cl(ep());
  for (const auto id : ids) {
    const json r = cl.call({{"op", "wait"}, {"id", id}});
    EXPECT_EQ(r["state"], "done") << r;
    EXPECT_EQ(r["result"]["work_ms"], 30.0);
  }
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Daemon, SigtermWithFiftyQueuedLongJobs) {
  // The drain timeout is long so that the checks below run while the daemon
  // drains however loaded the machine is; the test then ends the drain itself
  // by cancelling the jobs (the timeout's own cancel is tested in JobServer.Drain*).
  daemon_process d(base_args({"--max-running", "2", "--drain-timeout", "120", "--metrics", "127.0.0.1:0"}));
  ASSERT_TRUE(d.ready());
  const std::string metrics = d.line_value("metrics");  // http://127.0.0.1:PORT/metrics
  ASSERT_FALSE(metrics.empty());
  const std::string host_port = metrics.substr(7, metrics.find('/', 7) - 7);
  EXPECT_EQ(http_get(host_port, "/healthz").first, 200);
  EXPECT_EQ(http_get(host_port, "/readyz").first, 200);
  const int jobs = 52;  // 2 running + 50 queued
  client waiter(ep());
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < jobs; ++i) {
    const json r = waiter.call({{"op", "submit"}, {"program", "bing"}, {"args", {{"work_ms", 2000}, {"seed", i}}}});
    ASSERT_TRUE(r["ok"].get<bool>()) << r;
    ids.push_back(r["id"].get<std::uint64_t>());
  }
  for (const auto id : ids) waiter.send({{"op", "wait"}, {"id", id}});
  client submitter(ep());
  submitter.send({{"op", "submit"}, {"program", "bing"}, {"args", {{"work_ms", 2000}}}, {"wait", true}});
  // The submitter's request has no reply until its job ends: wait until the
  // server counts it, else the SIGTERM below may come first and reject it.
  std::pair<int, std::string> got;
  do got = http_get(host_port, "/metrics");
  while (got.first == 200 && metric(got.second, "promptly_jobs_submitted_total") < jobs + 1);
  const auto& [code, text] = got;
  EXPECT_EQ(code, 200);
  EXPECT_GE(metric(text, "promptly_jobs_submitted_total"), jobs + 1) << text.substr(0, 600);
  EXPECT_GE(metric(text, "promptly_jobs_queued"), jobs - 2);
  EXPECT_NE(text.find("promptly_flow_time_seconds"), std::string::npos);
  for (const char* op : {"start", "setup", "remove", "end"})
    EXPECT_NE(text.find(std::string("promptly_job_overhead_seconds{op=\"") + op + "\",stat=\"p99\"}"), std::string::npos)
        << op;
  d.signal(SIGTERM);
  // Draining: new jobs are rejected; /readyz says so.
  client late(ep());
  for (;;) {
    const json s = late.call({{"op", "stats"}});
    if (s.value("draining", false)) break;
  }
  const json r = late.call({{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 3}}}});
  EXPECT_EQ(code_of(r), "rejected");
  const auto ready = http_get(host_port, "/readyz");
  EXPECT_EQ(ready.first, 503);
  EXPECT_NE(ready.second.find("draining"), std::string::npos);
  // Every live job, the submitter's waiting one included.
  const json live = late.call({{"op", "jobs"}});
  for (const json& j : live["jobs"]) (void)late.call({{"op", "cancel"}, {"id", j["id"]}});
  // Every waiting client gets a terminal reply.
  std::set<std::uint64_t> answered;
  for (int i = 0; i < jobs; ++i) {
    const json w = waiter.receive();
    const std::string st = w.value("state", "");
    EXPECT_TRUE(st == "done" || st == "cancelled") << w;
    answered.insert(w["id"].get<std::uint64_t>());
  }
  EXPECT_EQ(answered.size(), static_cast<std::size_t>(jobs));
  const json s = submitter.receive();
  EXPECT_TRUE(s.value("state", "") == "cancelled" || s.value("state", "") == "done") << s;
  EXPECT_EQ(d.wait_exit(), 0);
  EXPECT_FALSE(waiter.receive_line().has_value());  // closed after its replies
}

TEST_F(Daemon, TcpNeedsLoopbackAndToken) {
  const std::string token_file = dir_.path + "/token";
  {
    std::ofstream(token_file) << "s3cret-token-0123456789\n";
  }
  ::chmod(token_file.c_str(), 0600);
  EXPECT_EQ(daemon_process(base_args({"--tcp", "127.0.0.1:0"})).wait_exit(), 2);  // no token file
  EXPECT_NE(daemon_process(base_args({"--tcp", "0.0.0.0:0", "--token-file", token_file})).wait_exit(), 0);
  daemon_process d(base_args({"--tcp", "127.0.0.1:0", "--token-file", token_file}));
  ASSERT_TRUE(d.ready());
  const auto hp = promptly::server::daemon::parse_host_port(d.line_value("listening tcp"));
  {
    client anon(promptly::server::daemon::connect_tcp(hp.host, hp.port));
    EXPECT_EQ(code_of(anon.call({{"op", "stats"}})), "not_allowed");
    EXPECT_EQ(code_of(anon.call({{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 3}}}})), "not_allowed");
    EXPECT_EQ(code_of(anon.call({{"op", "auth"}, {"token", "guess-guess-guess"}})), "not_allowed");
    EXPECT_TRUE(anon.call({{"op", "auth"}, {"token", "s3cret-token-0123456789"}})["ok"].get<bool>());
    EXPECT_EQ(anon.call({{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 10}}}, {"wait", true}})["result"], 55);
  }
  client with_token(endpoint{"", d.line_value("listening tcp"), "s3cret-token-0123456789"});
  EXPECT_TRUE(with_token.call({{"op", "stats"}})["ok"].get<bool>());
  // The Unix socket needs no token.
  client local(ep());
  EXPECT_TRUE(local.call({{"op", "stats"}})["ok"].get<bool>());
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

// Without a grace period, anyone who can reach the TCP port could hold every connection slot
// without the token. A TCP connection that shows no right token within --auth-timeout is told
// and closed, whether it sent nothing or only wrong tokens; one that sends the token on each
// request (never the auth op) stays past its deadline, and so does a Unix socket's (no token).
TEST_F(Daemon, TcpConnectionsWithoutTheTokenAreClosedAfterTheGracePeriod) {
  const std::string token_file = dir_.path + "/token", token = "s3cret-token-0123456789";
  {
    std::ofstream(token_file) << token << "\n";
  }
  ::chmod(token_file.c_str(), 0600);
  daemon_process d(base_args({"--tcp", "127.0.0.1:0", "--token-file", token_file, "--auth-timeout", "0.3"}));
  ASSERT_TRUE(d.ready());
  const std::string tcp = d.line_value("listening tcp");
  const auto hp = promptly::server::daemon::parse_host_port(tcp);
  client per_request(endpoint{"", tcp, token});  // accepted first: its deadline passes first
  EXPECT_TRUE(per_request.call({{"op", "stats"}})["ok"].get<bool>());
  client local(ep());
  client silent(promptly::server::daemon::connect_tcp(hp.host, hp.port));
  client guesser(promptly::server::daemon::connect_tcp(hp.host, hp.port));
  EXPECT_EQ(code_of(guesser.call({{"op", "auth"}, {"token", "guess-guess-guess"}})), "not_allowed");
  for (client* c : {&silent, &guesser}) {
    const json r = c->receive();
    EXPECT_EQ(code_of(r), "not_allowed");
    EXPECT_EQ(r["error"]["message"], "no request with the listener's token within 300 ms of connecting; closing");
    EXPECT_FALSE(c->receive_line().has_value());  // closed
  }
  EXPECT_TRUE(per_request.call({{"op", "stats"}})["ok"].get<bool>());
  EXPECT_TRUE(local.call({{"op", "stats"}})["ok"].get<bool>());
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
  EXPECT_EQ(daemon_process(base_args({"--auth-timeout", "0"})).wait_exit(), 2);  // out of range
}

// The slice the kernel reports in /proc for each of the daemon's worker
// threads (named promptly-w<i>); empty where /proc shows no se.slice.
std::vector<long> worker_slices_ns(pid_t pid) {
  std::vector<long> out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& t : std::filesystem::directory_iterator(tasks)) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("promptly-w", 0) != 0) continue;
    std::ifstream sched(t.path() / "sched");
    for (std::string line; std::getline(sched, line);)
      if (line.rfind("se.slice", 0) == 0) out.push_back(std::stol(line.substr(line.find(':') + 1)));
  }
  return out;
}

// --os-slice-us: out of the kernel's range is a usage error (exit 2); in
// range, every worker thread gets the slice. The second half skips on a
// kernel that does not take slice requests or does not show them.
TEST_F(Daemon, OsSliceOption) {
  EXPECT_EQ(daemon_process(base_args({"--os-slice-us", "50"})).wait_exit(), 2);
  EXPECT_EQ(daemon_process(base_args({"--os-slice-us", "100001"})).wait_exit(), 2);
  EXPECT_EQ(daemon_process(base_args({"--os-slice-us", "-1"})).wait_exit(), 2);
  daemon_process d(base_args({"--os-slice-us", "250"}));
  ASSERT_TRUE(d.ready());
  std::chrono::microseconds granted{0};
  std::thread([&] { granted = promptly::detail::request_os_time_slice(std::chrono::microseconds{250}); }).join();
  std::ifstream self("/proc/thread-self/sched");
  const std::string all((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  if (granted != std::chrono::microseconds{250} || all.find("se.slice") == std::string::npos) {
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(), 0);
    GTEST_SKIP() << "this kernel does not take slice requests or does not show them in /proc";
  }
  // Each worker asks when its thread starts, which may be after "ready".
  EXPECT_TRUE(wait_until([&] {
    const auto slices = worker_slices_ns(d.pid());
    return slices.size() == 2 && slices[0] == 250'000 && slices[1] == 250'000;
  })) << "worker slices (ns): " << testing::PrintToString(worker_slices_ns(d.pid()));
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Daemon, SocketIsPrivate) {
  daemon_process d(base_args());
  ASSERT_TRUE(d.ready());
  struct stat st{};
  ASSERT_EQ(::lstat(sock_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::getuid());
  // A second daemon on the same socket refuses to start.
  EXPECT_EQ(daemon_process(base_args()).wait_exit(), 1);
  // A directory others may write to is refused.
  const std::string open_dir = dir_.path + "/open";
  ::mkdir(open_dir.c_str(), 0777);
  ::chmod(open_dir.c_str(), 0777);
  EXPECT_EQ(daemon_process({"--socket", open_dir + "/s.sock", "--workers", "1"}).wait_exit(), 1);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
  EXPECT_NE(::access(sock_.c_str(), F_OK), 0);  // removed on exit
}

TEST_F(Daemon, ProgramPluginsFromTheOperatorsDirectory) {
  daemon_process d(base_args({"--programs", PROMPTLYD_TEST_PLUGIN_DIR}));
  ASSERT_TRUE(d.ready());
  client cl(ep());
  // The plugin binds to the daemon's own runtime: its fork-join tasks run in the job's pool.
  const json r = cl.call({{"op", "submit"}, {"program", "plugin_sum"}, {"args", {{"n", 1000}}}, {"wait", true}});
  ASSERT_EQ(r["state"], "done") << r;
  EXPECT_EQ(r["result"]["sum"], 499500);
  EXPECT_EQ(r["result"]["in_pool"], true);
  EXPECT_EQ(code_of(cl.call({{"op", "submit"}, {"program", "plugin_square"}, {"args", {{"x", "two"}}}})), "bad_args");
  // The plugin uses I/O timers and futures the daemon itself never calls:
  // it loaded, so the daemon exports the whole public API.
  const json io = cl.call({{"op", "submit"}, {"program", "plugin_io"}, {"args", {{"us", 200}}}, {"wait", true}});
  ASSERT_EQ(io["state"], "done") << io;
  EXPECT_EQ(io["result"]["sum"], 42);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
  // A directory that does not exist is refused as an option.
  EXPECT_EQ(daemon_process(base_args({"--programs", dir_.path + "/none"})).wait_exit(), 2);
}

TEST_F(Daemon, CancelStopsParkedJobsAndTheDrainDeadlineAbandonsTheRest) {
  const std::string err_path = dir_.path + "/stderr";
  daemon_process d(base_args({"--programs", PROMPTLYD_TEST_PLUGIN_DIR, "--drain-timeout", "1"}), err_path);
  ASSERT_TRUE(d.ready());
  client cl(ep());
  // A job parked in its context's sleep: cancel wakes it, it ends cancelled.
  const std::uint64_t parked = cl.call({{"op", "submit"}, {"program", "plugin_park"}})["id"].get<std::uint64_t>();
  const json c = cl.call({{"op", "cancel"}, {"id", parked}});
  EXPECT_TRUE(c["cancelled"].get<bool>()) << c;
  EXPECT_TRUE(c["state"] == "cancelled" || (c["state"] == "running" && c["cancel_requested"] == true)) << c;
  {
    watchdog dog(std::chrono::seconds(10), "wait for a cancelled parked job");
    const json w = cl.call({{"op", "wait"}, {"id", parked}});
    EXPECT_EQ(w["state"], "cancelled") << w;
  }
  // A job that ignores cancellation: still running, the request reported.
  const std::uint64_t stubborn = cl.call({{"op", "submit"}, {"program", "plugin_stubborn"}})["id"].get<std::uint64_t>();
  // Its program must have started: a job cancelled before its root runs
  // ends cancelled without running it. run_us > 0 once the root started.
  {
    watchdog dog(std::chrono::seconds(10), "the stubborn job's start");
    while (cl.call({{"op", "status"}, {"id", stubborn}})["timing"]["run_us"].get<double>() <= 0) {
    }
  }
  const json sc = cl.call({{"op", "cancel"}, {"id", stubborn}});
  EXPECT_EQ(sc["state"], "running") << sc;
  EXPECT_EQ(sc["cancel_requested"], true) << sc;
  const json st = cl.call({{"op", "status"}, {"id", stubborn}});
  EXPECT_EQ(st["state"], "running") << st;
  EXPECT_EQ(st["cancel_requested"], true) << st;
  // SIGTERM: past --drain-timeout (and the cancellation grace) the daemon
  // exits with status 3 and names the job it abandoned.
  const auto t0 = std::chrono::steady_clock::now();
  d.signal(SIGTERM);
  {
    watchdog dog(std::chrono::seconds(20), "promptlyd exit after the drain deadline");
    EXPECT_EQ(d.wait_exit(), 3);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 10.0) << "drain 1 s + grace 1 s, then exit";
  std::ifstream in(err_path);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("abandoned job " + std::to_string(stubborn) + " (plugin_stubborn)"), std::string::npos) << err;
  EXPECT_EQ(::access(sock_.c_str(), F_OK), -1) << "the socket is removed on this exit too";
}

TEST_F(Daemon, ConnectionLimit) {
  daemon_process d(base_args({"--max-connections", "2"}));
  ASSERT_TRUE(d.ready());
  client a(ep()), b(ep());
  ASSERT_TRUE(a.call({{"op", "version"}})["ok"].get<bool>());  // both accepted by now
  ASSERT_TRUE(b.call({{"op", "version"}})["ok"].get<bool>());
  client c(ep());
  const json r = c.receive();
  EXPECT_EQ(code_of(r), "rejected");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("too many connections"), std::string::npos);
  EXPECT_FALSE(c.receive_line().has_value());
  EXPECT_TRUE(a.call({{"op", "stats"}})["ok"].get<bool>());  // the others go on
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Daemon, CliExitCodes) {
  daemon_process d(base_args());
  ASSERT_TRUE(d.ready());
  auto run = [&](const std::string& args) {
    const std::string cmd = std::string(PROMPTLY_CLI_PATH) + " --socket " + sock_ + " " + args + " >/dev/null 2>&1";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  EXPECT_EQ(run("submit fib n=12 --wait"), 0);
  EXPECT_EQ(run("submit fib n=-1"), 1);       // bad_args from the server
  EXPECT_EQ(run("status 99999"), 1);          // unknown_job
  EXPECT_EQ(run("submit"), 2);                // usage
  EXPECT_EQ(run("frobnicate"), 2);
  EXPECT_EQ(run("stats"), 0);
  EXPECT_EQ(run("submit-periodic fib n=5 --period-ms 2 --count 3"), 0);
  EXPECT_EQ(run("periodic 1"), 0);
  EXPECT_EQ(run("cancel-periodic 1"), 0);
  EXPECT_EQ(run("periodic 999"), 1);                      // unknown_job
  EXPECT_EQ(run("submit-periodic fib n=5 --period-ms 0.01"), 1);  // bad_args: period too short
  EXPECT_EQ(run("submit-periodic fib n=5"), 2);           // usage: --period-ms is required
  EXPECT_EQ(run("watch --count 2 --interval 10"), 0);
  EXPECT_EQ(run("load --workload fixed --program fib --arg n=5 --rate 200 --duration 0.2 --no-progress"), 0);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

}  // namespace
