// promptlyd's HTTP/JSON API (docs/server.md, "HTTP API") and its HAProxy
// agent (docs/cluster.md, "Agent"), end to end on loopback: each status code
// the API promises, the bearer token, body and header limits, slow and
// malformed clients, refused option combinations, the event stream, and the
// agent's answers through a drain. Every wait is on a reply, a probe or the
// child's exit, bounded by receive timeouts and wait_until.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <openssl/ssl.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_support.hpp"
#include "server/daemon/agent.hpp"
#include "server_http_support.hpp"
#include "test_support.hpp"

using nlohmann::json;
using promptly::server::daemon::client;

namespace {

const std::string token = "http-test-token-0123456789abcdef";

class Http : public ::testing::Test {
 protected:
  temp_dir dir;
  std::string token_file = dir.path + "/token";
  void SetUp() override {
    std::ofstream(token_file) << token << "\n";
    ::chmod(token_file.c_str(), 0600);
  }
  std::vector<std::string> args(std::vector<std::string> more = {}) const {
    std::vector<std::string> a{"--socket", dir.path + "/d.sock", "--workers", "1", "--http", "127.0.0.1:0",
                               "--token-file", token_file};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  static std::string http_of(const daemon_process& d) {
    const std::string url = d.line_value("listening http");
    return url.substr(url.find("://") + 3);
  }
};

json body_of(const http_reply& r) { return r.body.empty() ? json() : json::parse(r.body); }

std::string agent_says(const daemon_process& d) {
  const auto hp = promptly::server::daemon::parse_host_port(d.line_value("agent"));
  client c(promptly::server::daemon::connect_tcp(hp.host, hp.port));
  const auto line = c.receive_line();
  return line ? *line : "";
}

TEST_F(Http, SubmitWaitStatusAndCancelCarryTheNodesIds) {
  daemon_process d(args({"--node-id", "n1"}));
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);

  const auto waited = http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":10},"wait":true})");
  ASSERT_EQ(waited.status, 200) << waited.body;
  EXPECT_EQ(body_of(waited)["result"], 55);
  EXPECT_EQ(body_of(waited)["id"], "n1-1");
  EXPECT_EQ(waited.headers.at("location"), "/v1/jobs/n1-1");

  const auto accepted = http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":12}})");
  ASSERT_EQ(accepted.status, 202) << accepted.body;
  const std::string id = body_of(accepted)["id"];
  const auto done = http_call(h, "GET", "/v1/jobs/" + id + "?wait=1", token);
  ASSERT_EQ(done.status, 200);
  EXPECT_EQ(body_of(done)["state"], "done");
  EXPECT_EQ(body_of(done)["result"], 144);
  EXPECT_EQ(body_of(http_call(h, "GET", "/v1/jobs/" + id, token))["result"], 144);

  const auto long_job = http_call(h, "POST", "/v1/jobs", token, R"({"program":"bing","args":{"work_ms":10000}})");
  ASSERT_EQ(long_job.status, 202);
  const std::string long_id = body_of(long_job)["id"];
  const auto live = http_call(h, "GET", "/v1/jobs?state=running", token);
  ASSERT_EQ(live.status, 200);
  EXPECT_EQ(body_of(live)["jobs"].size(), 1u) << live.body;
  const auto cancelled = http_call(h, "DELETE", "/v1/jobs/" + long_id, token);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_TRUE(body_of(cancelled)["cancelled"].get<bool>());
  EXPECT_EQ(body_of(http_call(h, "GET", "/v1/jobs/" + long_id + "?wait=true", token))["state"], "cancelled");
  const auto stats = http_call(h, "GET", "/v1/stats", token);
  ASSERT_EQ(stats.status, 200);
  EXPECT_EQ(body_of(stats)["submitted"], 3);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, ErrorsGetTheirStatusCodesAndTheDaemonKeepsServing) {
  daemon_process d(args({"--node-id", "n1", "--max-body", "1024"}));
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);
  auto code = [](const http_reply& r) { return body_of(r)["error"]["code"].get<std::string>(); };

  auto r = http_call(h, "POST", "/v1/jobs", token, "{not json");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(code(r), "bad_request");
  EXPECT_EQ(http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","colour":1})").status, 400);
  EXPECT_EQ(http_call(h, "POST", "/v1/jobs", token, R"({"op":"cancel","program":"fib"})").status, 400);
  EXPECT_EQ(http_call(h, "POST", "/v1/jobs", token, "[1,2]").status, 400);
  r = http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":-1}})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(code(r), "bad_args");
  r = http_call(h, "POST", "/v1/jobs", token, R"({"program":"no_such_program"})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(code(r), "unknown_program");
  r = http_call(h, "GET", "/v1/jobs/n1-999", token);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(code(r), "unknown_job");
  EXPECT_EQ(http_call(h, "GET", "/v1/jobs/n2-1", token).status, 404);  // another node's id
  EXPECT_EQ(http_call(h, "DELETE", "/v1/jobs/x", token).status, 404);
  EXPECT_EQ(http_call(h, "GET", "/v1/jobs?state=done", token).status, 400);

  r = http_call(h, "GET", "/v1/stats", "");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.headers["www-authenticate"], "Bearer");
  EXPECT_EQ(http_call(h, "GET", "/v1/stats", "wrong").status, 401);
  std::string same_length = token;
  same_length.back() = same_length.back() == 'f' ? 'e' : 'f';
  EXPECT_EQ(http_call(h, "POST", "/v1/jobs", same_length, R"({"program":"fib","args":{"n":3}})").status, 401);

  const std::string big = R"({"program":"fib","args":{"n":3},"tag":")" + std::string(4096, 'x') + "\"}";
  EXPECT_EQ(http_call(h, "POST", "/v1/jobs", token, big).status, 413);

  // Malformed requests: a clear 400, never a hang or a crash.
  EXPECT_EQ(http_raw(h, "GARBAGE\r\n\r\n").status, 400);
  EXPECT_EQ(http_raw(h, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(20000, 'a') + "\r\n\r\n").status, 400);
  EXPECT_EQ(http_raw(h, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                           "\r\nContent-Length: nope\r\n\r\n{}").status,
            400);

  EXPECT_EQ(http_call(h, "GET", "/healthz", "").status, 200);
  r = http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":3},"wait":true})");
  EXPECT_EQ(r.status, 200);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, AFullOrDrainingNodeAnswers503WithRetryAfterAndItsAgentSaysSo) {
  daemon_process d(args({"--max-running", "1", "--max-queued", "0", "--agent-port", "0"}));
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);
  EXPECT_EQ(agent_says(d), "up 100% maxconn:1");
  const auto busy = http_call(h, "POST", "/v1/jobs", token, R"({"program":"bing","args":{"work_ms":10000}})");
  ASSERT_EQ(busy.status, 202);
  const std::string id = body_of(busy)["id"];
  auto r = http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":3}})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(body_of(r)["error"]["code"], "rejected");
  EXPECT_EQ(http_call(h, "GET", "/readyz", "").status, 503);
  EXPECT_EQ(agent_says(d), "down");

  d.signal(SIGTERM);
  ASSERT_TRUE(wait_until([&] { return agent_says(d) == "drain"; }));
  r = http_call(h, "POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":3}})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  // The accepted job is still the client's: its status and cancel are served while draining.
  EXPECT_EQ(http_call(h, "DELETE", "/v1/jobs/" + id, token).status, 200);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, SlowHeaderClientsDoNotKeepHealthzFromAnswering) {
  daemon_process d(args({"--http-threads", "8", "--http-request-timeout", "0.2"}));
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);
  const auto hp = promptly::server::daemon::parse_host_port(h);
  std::vector<client> slow;
  for (int i = 0; i < 16; ++i) {  // twice the endpoint's threads
    slow.emplace_back(promptly::server::daemon::connect_tcp(hp.host, hp.port));
    const std::string head = "POST /v1/jobs HTTP/1.1\r\n";
    ASSERT_EQ(::send(slow.back().fd(), head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  }
  std::atomic<bool> probed{false};
  std::thread trickler([&] {
    // The attack's pace, not a synchronisation: a header byte per client every 50 ms.
    while (!probed.load()) {
      for (auto& c : slow) (void)::send(c.fd(), "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      pollfd none{-1, 0, 0};
      (void)::poll(&none, 1, 50);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = http_call(h, "GET", "/healthz", "", "", std::chrono::seconds(5));
  const auto took = std::chrono::steady_clock::now() - t0;
  probed.store(true);
  trickler.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_LT(took, std::chrono::seconds(2)) << std::chrono::duration<double>(took).count() << " s";
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, EventsStreamStatsAsServerSentEvents) {
  daemon_process d(args());
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);
  EXPECT_EQ(http_call(h, "GET", "/v1/events?interval_ms=1", token).status, 422);  // below the 10 ms floor
  EXPECT_EQ(http_call(h, "GET", "/v1/events?interval_ms=abc", token).status, 400);
  const auto hp = promptly::server::daemon::parse_host_port(h);
  client c(promptly::server::daemon::connect_tcp(hp.host, hp.port));
  timeval tv{10, 0};
  ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  c.send_raw("GET /v1/events?interval_ms=10 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n\r\n");
  int events = 0;
  std::vector<std::uint64_t> seqs;
  while (seqs.size() < 2) {
    const auto line = c.receive_line();
    ASSERT_TRUE(line.has_value());
    if (*line == "event: stats") ++events;
    if (line->rfind("data: ", 0) == 0) seqs.push_back(json::parse(line->substr(6))["seq"].get<std::uint64_t>());
  }
  EXPECT_EQ(events, 2);
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{0, 1}));
  d.signal(SIGTERM);  // ends the stream
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, UnsafeOptionCombinationsAreRefusedWithExitStatus2) {
  const std::string sock = dir.path + "/d.sock";
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--socket", sock, "--http", "127.0.0.1:0"},                                  // no token
           {"--socket", sock, "--http", "0.0.0.0:0", "--token-file", token_file},         // public, no TLS
           {"--socket", sock, "--http", "127.0.0.1:0", "--token-file", token_file, "--tls-cert", token_file},
           {"--socket", sock, "--tls-cert", token_file, "--tls-key", token_file},           // TLS without --http
           {"--socket", sock, "--http", "127.0.0.1:0", "--token-file", token_file, "--node-id", "n-1"}}) {
    daemon_process d(bad, dir.path + "/err");
    EXPECT_FALSE(d.ready());
    EXPECT_EQ(d.wait_exit(), 2) << bad[2];
  }
}

// Keep-alive (docs/server.md, "HTTP API"): a connection carries request after
// request, holding no thread between them, and is closed when idle too long,
// after its last allowed request, or when its request's end is not certain.
TEST_F(Http, AKeptConnectionCarriesRequestAfterRequest) {
  daemon_process d(args({"--node-id", "n1"}));
  ASSERT_TRUE(d.ready());
  http_connection c(http_of(d));
  const std::string body = R"({"program":"fib","args":{"n":10},"wait":true})";
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(c.send(http_request("POST", "/v1/jobs", token, body, /*keep_alive=*/true))) << i;
    const auto r = c.receive();
    ASSERT_EQ(r.status, 200) << "request " << i << " on one connection";
    EXPECT_EQ(body_of(r)["result"], 55);
    EXPECT_EQ(r.header("connection"), "");
  }
  // Pipelined: two requests in one write get two replies, in order.
  ASSERT_TRUE(c.send(http_request("GET", "/healthz", "", "", true) + http_request("GET", "/v1/jobs/n1-2", token, "", true)));
  EXPECT_EQ(c.receive().status, 200);
  const auto second = c.receive();
  ASSERT_EQ(second.status, 200);
  EXPECT_EQ(body_of(second)["id"], "n1-2");
  // "Connection: close" is honoured: the reply says so and the connection ends.
  ASSERT_TRUE(c.send(http_request("GET", "/healthz", "")));
  const auto last = c.receive();
  EXPECT_EQ(last.status, 200);
  EXPECT_EQ(last.header("connection"), "close");
  EXPECT_TRUE(c.closed_by_server());
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, AnIdleConnectionIsClosedAfterTheIdleTimeoutAndTheLastAfterMaxRequests) {
  daemon_process d(args({"--http-idle-timeout", "0.2", "--http-max-requests", "3"}));
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);
  http_connection idle(h);
  ASSERT_TRUE(idle.send(http_request("GET", "/healthz", "", "", true)));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(idle.receive().status, 200);
  EXPECT_TRUE(idle.closed_by_server());  // within the 10 s receive timeout
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));

  http_connection busy(h);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(busy.send(http_request("GET", "/healthz", "", "", true)));
    const auto r = busy.receive();
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.header("connection"), i == 3 ? "close" : "") << i;
  }
  EXPECT_TRUE(busy.closed_by_server());
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, IdleKeptConnectionsHoldNoThreadAndTheirNumberIsBounded) {
  // A held thread would hold it for 30 s: /healthz answers only if idle
  // connections hold none.
  daemon_process d(args({"--http-threads", "8", "--http-request-timeout", "30", "--http-max-idle", "12"}));
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);
  std::vector<http_connection> conns;
  std::vector<std::string> said;
  for (int i = 0; i < 16; ++i) {  // twice the threads, 4 more than may stay idle
    conns.emplace_back(h);
    ASSERT_TRUE(conns.back().send(http_request("GET", "/healthz", "", "", true)));
    const auto r = conns.back().receive();
    ASSERT_EQ(r.status, 200) << i;
    said.push_back(r.header("connection"));
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(http_call(h, "GET", "/healthz", "", "", std::chrono::seconds(5)).status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  // Exactly max-idle connections stayed open and serve a second request; the others were closed.
  int kept = 0;
  for (std::size_t i = 0; i < conns.size(); ++i) {
    const bool sent = conns[i].send(http_request("GET", "/healthz", "", "", true));
    const auto r = sent ? conns[i].receive() : http_reply{};
    if (r.status == 200) ++kept;
    else EXPECT_EQ(r.status, 0) << i;
    if (said[i] == "close") EXPECT_EQ(r.status, 0) << "connection " << i << " said close";
  }
  EXPECT_EQ(kept, 12);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST_F(Http, AConnectionWhoseRequestEndIsUncertainIsClosedSoNothingIsSmuggled) {
  daemon_process d(args());
  ASSERT_TRUE(d.ready());
  const std::string h = http_of(d);
  const std::string smuggled = http_request("POST", "/v1/jobs", token, R"({"program":"fib","args":{"n":3}})", true);
  const auto expect_closed_after = [&](const std::string& raw, int status, const char* what) {
    http_connection c(h);
    ASSERT_TRUE(c.send(raw)) << what;
    const auto r = c.receive();
    EXPECT_EQ(r.status, status) << what;
    EXPECT_EQ(r.header("connection"), "close") << what;
    EXPECT_TRUE(c.closed_by_server()) << what << ": a second reply came";
  };
  // A route that answers before reading the body (the token check), a method
  // whose body httplib does not read, chunked framing, a Content-Length that
  // is no number: the rest of the bytes would read as a request of its own.
  const std::string len = std::to_string(smuggled.size());
  expect_closed_after("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: " + len + "\r\n\r\n" + smuggled, 401,
                      "unauthorized with a body");
  expect_closed_after("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: " + len + "\r\n\r\n" + smuggled, 200,
                      "GET with a body");
  expect_closed_after("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                          "\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + smuggled,
                      400, "chunked");
  expect_closed_after("GARBAGE\r\n\r\n" + smuggled, 400, "a malformed request line");
  EXPECT_EQ(body_of(http_call(h, "GET", "/v1/stats", token))["submitted"], 0) << "a smuggled request ran";
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

// Requests over one TLS connection (certificate not verified: the test's
// own, self-signed), each sent once the reply before it is complete; the
// replies as read to the end of the connection (the last request closes it).
std::string https_requests(const std::string& host_port, const std::vector<std::string>& requests) {
  const auto hp = promptly::server::daemon::parse_host_port(host_port);
  client c(promptly::server::daemon::connect_tcp(hp.host, hp.port));
  timeval tv{10, 0};
  ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, c.fd());
  std::string out;
  // Whether `out` holds n complete replies (each with a Content-Length).
  const auto replies_in = [&out](std::size_t n) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto end = out.find("\r\n\r\n", at);
      const auto len = out.find("Content-Length: ", at);
      if (end == std::string::npos || len == std::string::npos || len > end) return false;
      at = end + 4 + std::stoul(out.substr(len + 16));
      if (out.size() < at) return false;
    }
    return true;
  };
  if (SSL_connect(ssl) == 1) {
    char buf[4096];
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (SSL_write(ssl, requests[i].data(), static_cast<int>(requests[i].size())) <= 0) break;
      const bool last = i + 1 == requests.size();
      for (int n; (last || !replies_in(i + 1)) && (n = SSL_read(ssl, buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    }
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return out;
}

std::string https_request(const std::string& host_port, const std::string& request) {
  return https_requests(host_port, {request});
}

TEST_F(Http, ServesTheApiOverTls) {
  const std::string cert = dir.path + "/cert.pem", key = dir.path + "/key.pem";
  const std::string make = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost -keyout " + key +
                           " -out " + cert + " >/dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "no openssl command to make a test certificate";
  daemon_process d(args({"--tls-cert", cert, "--tls-key", key}));
  ASSERT_TRUE(d.ready());
  const std::string url = d.line_value("listening http");
  ASSERT_EQ(url.rfind("https://", 0), 0u) << url;
  const std::string h = url.substr(8);
  EXPECT_EQ(https_request(h, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").substr(0, 12), "HTTP/1.1 200");
  const std::string body = R"({"program":"fib","args":{"n":10},"wait":true})";
  const std::string reply = https_request(h, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer " + token +
                                                 "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(reply.substr(0, 12), "HTTP/1.1 200") << reply;
  EXPECT_EQ(json::parse(reply.substr(reply.find("\r\n\r\n") + 4))["result"], 55);
  EXPECT_EQ(https_request(h, "GET /v1/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").substr(0, 12), "HTTP/1.1 401");
  // Two requests on one connection, the second after the first's reply.
  const std::string two = https_requests(h, {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                                             "GET /v1/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"});
  EXPECT_EQ(two.substr(0, 12), "HTTP/1.1 200") << two;
  EXPECT_NE(two.find("HTTP/1.1 401", 12), std::string::npos) << two;
  // Plain HTTP on the TLS port gets no answer, and the daemon goes on.
  EXPECT_EQ(http_call(h, "GET", "/healthz", "").status, 0);
  EXPECT_EQ(https_request(h, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").substr(0, 12), "HTTP/1.1 200");
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

// The CLI's output and exit status for one command.
std::pair<int, std::string> cli(const std::string& args) {
  const std::string cmd = std::string(PROMPTLY_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST_F(Http, TheCliSpeaksHttpWithUrl) {
  daemon_process d(args({"--node-id", "n4"}));
  ASSERT_TRUE(d.ready());
  const std::string url = "--url " + d.line_value("listening http") + " --token-file " + token_file;
  auto [rc, out] = cli(url + " submit fib n=10 --wait");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(json::parse(out)["result"], 55);
  std::tie(rc, out) = cli(url + " status n4-1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(json::parse(out)["id"], "n4-1");
  std::tie(rc, out) = cli(url + " status n4-99");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("error unknown_job"), std::string::npos) << out;
  EXPECT_EQ(cli(url + " programs").first, 2);  // not an HTTP route
  EXPECT_EQ(cli("--socket " + dir.path + "/d.sock status n4-1").first, 2);  // not a line-protocol id
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST(Agent, WeightFollowsCoreAndSlotRoom) {
  using promptly::server::daemon::agent_answer;
  const promptly::server::daemon::agent_limits l{4, 8, 8};  // 4 workers, 16 slots
  promptly::server::server_stats s;
  EXPECT_EQ(agent_answer(true, true, s, l), "up 100% maxconn:16\n");
  s.cores_in_use = 4;  // every core busy: (0 + 1) / 5
  s.running = 4;       // 12 of 16 slots left
  EXPECT_EQ(agent_answer(true, true, s, l), "up 15% maxconn:16\n");
  s.running = 8;
  s.queued = 7;  // 1 slot left: the floor, still selectable
  EXPECT_EQ(agent_answer(true, true, s, l), "up 1% maxconn:16\n");
  EXPECT_EQ(agent_answer(true, false, s, l), "down\n");
  EXPECT_EQ(agent_answer(false, false, s, l), "drain\n");
  EXPECT_EQ(agent_answer(false, true, s, l), "drain\n");
}

}  // namespace
