// promptlyd: the multiprogrammed parallel job server (AMCilk, "Adaptive
// Scheduling of Multiprogrammed Dynamic-Multithreading Applications",
// Sec. 3-4) behind protocol version 1 (docs/server.md).
//
// Threads: the runtime's workers run jobs only; the front end's epoll thread
// serves every connection; the metrics endpoint's threads
// (metrics_http.hpp) serve /metrics, /healthz and /readyz, and with --http
// the HTTP API's (http_api.hpp) too; with --agent-port, the agent's thread
// answers HAProxy (src/server/daemon/agent.hpp); with --partition,
// the partition thread moves the cores the jobs hold between resctrl groups
// (src/server/daemon/partition); the main thread waits for SIGTERM/SIGINT
// and drains.
// Exit status: 0 after a drain, 1 if start-up failed, 2 for bad options
// (and for --partition on a machine without resctrl), 3 after a drain that
// abandoned jobs still running past the deadline.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include <promptly/promptly.hpp>
#include <promptly/server/builtin_programs.hpp>
#include <promptly/server/job_server.hpp>
#include <promptly/server/plugin.hpp>
#include <promptly/version.hpp>

#include "http_api.hpp"
#include "metrics_http.hpp"
#include "server/daemon/agent.hpp"
#include "server/daemon/front_end.hpp"
#include "server/daemon/metrics.hpp"
#include "server/daemon/partition.hpp"
#include "server/daemon/socket.hpp"
#include "server/protocol/protocol.hpp"

namespace {

using namespace promptly::server;

struct options {
  std::string socket = daemon::default_socket_path();
  bool no_socket = false;
  std::string tcp;
  std::string token_file;
  std::string metrics;
  std::string http;
  std::string node_id;
  std::string tls_cert, tls_key;
  unsigned http_threads = 64;
  std::size_t max_body_bytes = std::size_t{1} << 20;
  double http_request_timeout_s = 5;
  double http_idle_timeout_s = 5;
  unsigned http_max_requests = 1000;
  unsigned http_max_idle = 1024;
  int agent_port = -1;
  unsigned workers = 0;
  std::string policy;
  unsigned os_slice_us = 0;
  std::size_t max_queued = 1024;
  std::size_t max_running = 64;
  std::size_t max_connections = 1024;
  std::string programs_dir;
  double drain_timeout_s = 30;
  double result_ttl_s = 600;
  double flush_timeout_s = 5;
  double auth_timeout_s = 10;
  std::vector<std::string> partitions;  // --partition CLASS=SPEC
  std::string resctrl_root = promptly::resctrl::default_root.string();
  unsigned partition_interval_ms = 10;
};

// What --partition was turned into before serve: the specs and the
// controller (null without --partition: then nothing touches resctrl).
struct partitioning {
  std::vector<daemon::partition_spec> specs;
  std::unique_ptr<promptly::resctrl::controller> controller;
};

// The job classes a --partition may name (besides "default").
std::vector<std::string> class_names(const job_server_options& jo) {
  std::vector<std::string> out;
  for (const auto& [name, rank] : jo.classes) out.push_back(name);
  return out;
}

// Raises the descriptor soft limit to the hard limit, as Go's runtime does (1.19): the daemon's
// own bounds (protocol connections, HTTP threads and the HTTP waiting sets, docs/server.md) add
// up to more than the common soft limit of 1024, past which new connections would wait
// unaccepted in the kernel's queue instead of getting their documented 503. An unlimited hard
// limit is capped at 2^20, the kernel's default nr_open. Nothing fails if it cannot.
void raise_descriptor_limit() noexcept {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max) return;
  rlimit want = r;
  want.rlim_cur = r.rlim_max == RLIM_INFINITY ? rlim_t{1} << 20 : r.rlim_max;
  if (want.rlim_cur > r.rlim_cur) (void)::setrlimit(RLIMIT_NOFILE, &want);
}

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

// After --drain-timeout, how long cancelled jobs may take to stop before the
// daemon abandons them, and the exit status when it did (docs/server.md).
constexpr std::chrono::milliseconds cancel_grace{1000};
constexpr int exit_abandoned = 3;

// The HTTP API's listener and HAProxy's agent, when asked for.
struct http_listeners {
  std::optional<daemon::http_api> api;
  std::optional<daemon::metrics_http> http;
  std::optional<daemon::agent_listener> agent;
  void stop() {
    http.reset();  // ends the event streams, then the server
    agent.reset();
  }
};

void start_http(const options& o, protocol::service& svc, job_server& srv, unsigned workers, const std::string& token,
                http_listeners& out, std::vector<std::string>& lines) {
  if (!o.http.empty()) {
    daemon::http_api_options ao;
    ao.token = token;
    ao.node_id = o.node_id;
    ao.max_body_bytes = o.max_body_bytes;
    // Threads beyond these stay free for probes and short requests.
    ao.max_blocking = o.http_threads - std::min(o.http_threads / 4, 8u);
    out.api.emplace(svc, ao);
    daemon::metrics_http_options ho;
    ho.max_threads = o.http_threads;
    ho.request_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.http_request_timeout_s * 1000));
    ho.idle_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.http_idle_timeout_s * 1000));
    ho.max_requests = o.http_max_requests;
    ho.max_idle = o.http_max_idle;
    ho.api = &*out.api;
    ho.tls_cert = o.tls_cert;
    ho.tls_key = o.tls_key;
    out.http.emplace(svc, workers, o.http, ho);
    lines.push_back("listening http " + out.http->url());
  }
  if (o.agent_port >= 0) {
    const int fd = daemon::listen_tcp("127.0.0.1", static_cast<std::uint16_t>(o.agent_port));
    const std::uint16_t port = daemon::bound_port(fd);
    out.agent.emplace(srv, daemon::agent_limits{workers, o.max_running, o.max_queued}, fd);
    lines.push_back("agent 127.0.0.1:" + std::to_string(port));
  }
}

// After the drain: the totals on stderr, our socket file removed, and the
// exit status (3, without destroying anything, if jobs were abandoned).
int finish_drain(const options& o, job_server& srv, const job_server::drain_report& drained, std::size_t unsent,
                 std::chrono::steady_clock::time_point t0, const daemon::socket_file_id& socket_file) {
  const auto st = srv.stats();
  std::fprintf(stderr,
               "promptlyd: drained in %.3f s: %zu job(s) cancelled at the deadline; totals submitted %llu done %llu "
               "failed %llu cancelled %llu rejected %llu; %zu connection(s) closed with replies unsent\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), drained.cancelled,
               static_cast<unsigned long long>(st.submitted), static_cast<unsigned long long>(st.done),
               static_cast<unsigned long long>(st.failed), static_cast<unsigned long long>(st.cancelled),
               static_cast<unsigned long long>(st.rejected), unsent);
  // Only our own socket file: a daemon started since our listener closed
  // has bound a new one at the same path.
  if (!o.no_socket && !daemon::remove_socket_file(o.socket, socket_file))
    std::fprintf(stderr, "promptlyd: %s is not the socket this daemon bound any more; left in place\n", o.socket.c_str());
  if (!drained.abandoned.empty()) {
    // Their tasks still run on the runtime's workers: destroying the server
    // and the runtime would wait for them, so exit without destroying them.
    for (const auto& j : drained.abandoned)
      std::fprintf(stderr, "promptlyd: abandoned job %llu (%s), running %.3f s, still running %.1f s after its cancellation\n",
                   static_cast<unsigned long long>(j.id), j.program.c_str(), j.timing.run_us / 1e6,
                   std::chrono::duration<double>(cancel_grace).count());
    std::fprintf(stderr, "promptlyd: exit status %d: %zu job(s) abandoned at the drain deadline\n", exit_abandoned,
                 drained.abandoned.size());
    std::fflush(nullptr);
    std::_Exit(exit_abandoned);
  }
  return 0;
}

int serve(const options& o, const partitioning& parts) {
  // Block the stop signals before any thread exists, so every thread
  // inherits the mask and only sigwait below sees them; a closed peer must
  // not kill the daemon (send uses MSG_NOSIGNAL; httplib may not).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  promptly::runtime_config cfg;
  cfg.workers = o.workers;
  // equi by default: in the jobs suite's live rounds it had the lowest or near-lowest p99 flow
  // time of the policies and needs no size estimates; serpt has the lowest mean on Bing but not
  // on finance, and a higher p99 (docs/job-policies.md, "Choosing").
  cfg.policy = o.policy.empty() ? "equi" : o.policy;
  cfg.os_time_slice = std::chrono::microseconds(o.os_slice_us);
  // Partitions follow cores: worker i stays on the i-th CPU of the mask.
  cfg.pin_workers = parts.controller != nullptr;
  promptly::runtime rt(cfg);

  job_server_options jo;
  jo.max_queued = o.max_queued;
  jo.max_running = o.max_running;
  jo.result_ttl = std::chrono::milliseconds(static_cast<std::int64_t>(o.result_ttl_s * 1000));
  job_server srv(rt, jo);
  register_builtin_programs(srv);
  if (!o.programs_dir.empty()) {
    const auto loaded = load_program_plugins(srv, o.programs_dir);
    std::fprintf(stderr, "promptlyd: %zu plugin(s) loaded from %s\n", loaded, o.programs_dir.c_str());
  }
  // Declared after the runtime and the server, so destroyed (thread
  // stopped, groups removed) before them on every path.
  std::optional<daemon::partitioner> partition;
  if (parts.controller) {
    daemon::partitioner_options po;
    po.interval = std::chrono::milliseconds(o.partition_interval_ms);
    partition.emplace(*parts.controller, parts.specs, class_names(jo), po);
    for (const auto& p : parts.specs)
      std::fprintf(stderr, "promptlyd: %s (under %s)\n", daemon::describe_partition(p, parts.controller->caps()).c_str(),
                   o.resctrl_root.c_str());
    partition->start(rt, srv);
  }

  protocol::service svc(srv);
  svc.workers = rt.workers();
  daemon::front_end_options fo;
  fo.max_connections = o.max_connections;
  fo.auth_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.auth_timeout_s * 1000));
  daemon::front_end fe(svc, fo);
  std::vector<std::string> lines;
  daemon::socket_file_id socket_file;
  if (!o.no_socket) {
    fe.add_listener(daemon::listen_unix(o.socket, &socket_file), std::nullopt);
    lines.push_back("listening unix " + o.socket);
  }
  const std::string token = o.token_file.empty() ? std::string() : daemon::read_token_file(o.token_file);
  if (!o.tcp.empty()) {
    const auto hp = daemon::parse_host_port(o.tcp);
    const int fd = daemon::listen_tcp(hp.host, hp.port);
    const std::uint16_t port = daemon::bound_port(fd);
    fe.add_listener(fd, token);
    lines.push_back("listening tcp " + (hp.host == "::1" ? "[::1]" : hp.host) + ":" + std::to_string(port));
  }
  std::optional<daemon::metrics_http> metrics;
  if (!o.metrics.empty()) {
    metrics.emplace(svc, rt.workers(), o.metrics);
    lines.push_back("metrics " + metrics->url() + "/metrics");
  }
  // The HTTP API (http_api.hpp) on a listener of its own, so its waiting
  // requests never delay a --metrics scrape; the agent beside it.
  http_listeners http;
  start_http(o, svc, srv, rt.workers(), token, http, lines);
  fe.start();
  for (const auto& l : lines) say(l);
  std::fprintf(stderr, "promptlyd %s: %u workers, max %zu running + %zu queued, pid %d\n", PROMPTLY_VERSION,
               rt.workers(), o.max_running, o.max_queued, static_cast<int>(::getpid()));
  say("ready");

  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  // Drain (docs/server.md, "SIGTERM"): refuse new jobs with `rejected`
  // ("draining") while the front end keeps answering; let the jobs finish
  // within --drain-timeout, cancel the rest; every waiting client gets its
  // reply; then close the connections and exit 0.
  std::fprintf(stderr, "promptlyd: %s, draining (at most %.1f s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
               o.drain_timeout_s);
  srv.stop_accepting();
  const auto t0 = std::chrono::steady_clock::now();
  // The deadline is real: jobs cancelled at it get cancel_grace to stop;
  // one that ignores cancellation is abandoned, and the daemon exits anyway.
  const auto drained = srv.drain_within(std::chrono::milliseconds(static_cast<std::int64_t>(o.drain_timeout_s * 1000)),
                                        cancel_grace);
  const std::size_t unsent =
      fe.finish(std::chrono::milliseconds(static_cast<std::int64_t>(o.flush_timeout_s * 1000)));
  metrics.reset();
  http.stop();
  if (partition) {
    if (partition->stop())
      std::fprintf(stderr, "promptlyd: partition groups removed from %s\n", o.resctrl_root.c_str());
    else
      std::fprintf(stderr, "promptlyd: some partition groups stay in %s (see above)\n", o.resctrl_root.c_str());
  }
  return finish_drain(o, srv, drained, unsent, t0, socket_file);
}

void add_options(CLI::App& app, options& o) {
  app.add_option("--socket", o.socket, "Unix socket path (created mode 0600; its directory must be owned by you)")
      ->capture_default_str();
  app.add_flag("--no-socket", o.no_socket, "Do not listen on a Unix socket (then --tcp is required)");
  app.add_option("--tcp", o.tcp, "Also listen on TCP HOST:PORT (loopback only; needs --token-file; port 0 = any)");
  app.add_option("--token-file", o.token_file, "File whose first line is the token TCP clients must send (mode 0600)")
      ->check(CLI::ExistingFile);
  app.add_option("--metrics", o.metrics, "Serve /metrics, /healthz and /readyz on HOST:PORT (loopback only)");
  app.add_option("--http", o.http,
                 "Serve the HTTP/JSON API (/v1) and /metrics, /healthz, /readyz on HOST:PORT (needs --token-file; "
                 "beyond loopback also --tls-cert and --tls-key; port 0 = any)");
  app.add_option("--node-id", o.node_id, "Prefix of this node's job ids in the HTTP API ([A-Za-z0-9_]{1,32})");
  app.add_option("--tls-cert", o.tls_cert, "PEM certificate chain for --http (HTTPS)")->check(CLI::ExistingFile);
  app.add_option("--tls-key", o.tls_key, "PEM private key for --http (mode 0600)")->check(CLI::ExistingFile);
  app.add_option("--http-threads", o.http_threads, "HTTP connections served at once (more wait in arrival order, at most 1024; beyond: 503)")
      ->capture_default_str()->check(CLI::Range(8u, 4096u));
  app.add_option("--max-body", o.max_body_bytes, "Largest HTTP request body in bytes (more: 413)")
      ->capture_default_str()->check(CLI::Range(std::size_t{1024}, std::size_t{64} << 20));
  app.add_option("--http-request-timeout", o.http_request_timeout_s,
                 "Seconds an HTTP client has to send its whole request (headers and body)")
      ->capture_default_str()->check(CLI::Range(0.01, 600.0));
  app.add_option("--http-idle-timeout", o.http_idle_timeout_s,
                 "Seconds an HTTP connection may stay open, holding no thread, for its next request (0: no keep-alive)")
      ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  app.add_option("--http-max-requests", o.http_max_requests, "HTTP requests one connection may carry")
      ->capture_default_str()->check(CLI::Range(1u, 1000000u));
  app.add_option("--http-max-idle", o.http_max_idle, "HTTP connections kept open between requests at once")
      ->capture_default_str()->check(CLI::Range(0u, 65536u));
  app.add_option("--agent-port", o.agent_port,
                 "Answer HAProxy's agent check on 127.0.0.1:PORT (0 = any; docs/cluster.md)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--workers", o.workers, "Worker threads (0 = every CPU available)")->capture_default_str();
  app.add_option("--policy", o.policy, "Core-allocation policy (default: equi)");
  app.add_option("--os-slice-us", o.os_slice_us,
                 "Time slice in us (100-100000) the workers ask of the kernel (Linux 6.12+); 0 = PROMPTLY_OS_SLICE_US "
                 "or the kernel's. Shorter helps beside CPU-bound processes of others (docs/priorities.md)")
      ->capture_default_str();
  app.add_option("--max-queued", o.max_queued, "Accepted jobs that may wait to start; beyond: rejected")
      ->capture_default_str()->check(CLI::Range(std::size_t{0}, std::size_t{1} << 24));
  app.add_option("--max-running", o.max_running, "Jobs that may run at once")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  app.add_option("--max-connections", o.max_connections, "Open protocol connections at most")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--programs", o.programs_dir, "Load program plugins (*.so) from this directory")
      ->check(CLI::ExistingDirectory);
  app.add_option("--drain-timeout", o.drain_timeout_s, "Seconds jobs may run after SIGTERM before they are cancelled")
      ->capture_default_str()->check(CLI::Range(0.0, 86400.0));
  app.add_option("--result-ttl", o.result_ttl_s, "Seconds a finished job stays queryable by id")
      ->capture_default_str()->check(CLI::Range(1.0, 30.0 * 86400));
  app.add_option("--auth-timeout", o.auth_timeout_s,
                 "Seconds a TCP connection may take to show the token; then it is closed")
      ->capture_default_str()->check(CLI::Range(0.001, 3600.0));
  app.add_option("--flush-timeout", o.flush_timeout_s,
                 "Seconds to write the last replies to slow readers after the drain")
      ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  app.add_option("--partition", o.partitions,
                 "Give the cores of a job class's jobs cache ways and memory bandwidth through resctrl: "
                 "CLASS=SPEC, CLASS a job class or 'default', SPEC like l3:4@0,mb:50 (repeatable; needs Intel RDT)")
      ->take_all()->allow_extra_args(false);
  app.add_option("--resctrl-root", o.resctrl_root, "Where resctrl is mounted (used with --partition only)")
      ->capture_default_str();
  app.add_option("--partition-interval-ms", o.partition_interval_ms,
                 "Milliseconds between moves of the cores' resctrl groups (with --partition)")
      ->capture_default_str()->check(CLI::Range(1u, 60000u));
}

// Combinations that would expose the API unsafely are refused (exit 2).
void check_http_options(const options& o) {
  using promptly::server::daemon::http_api;
  if (!o.node_id.empty() && !http_api::valid_node_id(o.node_id))
    throw CLI::ValidationError("--node-id", "'" + o.node_id + "' is not 1-32 of A-Z a-z 0-9 _");
  if (o.tls_cert.empty() != o.tls_key.empty())
    throw CLI::ValidationError("--tls-cert", "--tls-cert and --tls-key go together");
  if (o.http.empty()) {
    if (!o.tls_cert.empty()) throw CLI::ValidationError("--tls-cert", "needs --http (TLS is for the HTTP API)");
    return;
  }
  const auto hp = promptly::server::daemon::parse_host_port(o.http);
  if (o.token_file.empty()) throw CLI::ValidationError("--http", "needs --token-file (HTTP clients must show a bearer token)");
  if (!promptly::server::daemon::is_loopback(hp.host) && o.tls_cert.empty())
    throw CLI::ValidationError("--http", o.http + " is not a loopback address: beyond loopback the API needs TLS "
                                         "(--tls-cert and --tls-key)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"promptlyd: the multiprogrammed parallel job server (protocol version 1, docs/server.md)"};
  app.set_version_flag("--version", std::string("promptlyd ") + PROMPTLY_VERSION + " (protocol 1)");
  options o;
  add_options(app, o);
  partitioning parts;
  try {
    app.parse(argc, argv);
    if (o.no_socket && o.tcp.empty()) throw CLI::ValidationError("--no-socket", "needs --tcp (nothing to listen on)");
    if (!o.tcp.empty() && o.token_file.empty())
      throw CLI::ValidationError("--tcp", "needs --token-file (TCP clients must authenticate)");
    {
      promptly::runtime_config slice;  // the runtime's own rule, checked before any thread starts
      slice.os_time_slice = std::chrono::microseconds(o.os_slice_us);
      try {
        promptly::validate(slice);
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--os-slice-us", e.what());
      }
    }
    check_http_options(o);
    if (!o.tcp.empty()) (void)promptly::server::daemon::parse_host_port(o.tcp);
    if (!o.metrics.empty()) (void)promptly::server::daemon::parse_host_port(o.metrics);
    for (const auto& v : o.partitions) parts.specs.push_back(promptly::server::daemon::parse_partition(v));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    (void)app.exit(e);
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "promptlyd: %s\n", e.what());
    return 2;
  }
  // Only --partition touches resctrl: a machine without it fails here, at
  // start-up, with the root named (exit 2, like any option it cannot honour).
  if (!parts.specs.empty()) {
    try {
      parts.controller = promptly::server::daemon::open_partitioning(o.resctrl_root);
      promptly::server::daemon::check_partitions(parts.specs, class_names(job_server_options{}),
                                                 parts.controller->caps());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "promptlyd: %s\n", e.what());
      return 2;
    }
  }
  raise_descriptor_limit();
  try {
    return serve(o, parts);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "promptlyd: %s\n", e.what());
    return 1;
  }
}
