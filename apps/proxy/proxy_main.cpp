// proxy_server: the caching web proxy as a program. Prints "LISTENING <port>" on stdout once it
// accepts connections; SIGINT or SIGTERM stop it cleanly (exit 0). README.md has the options.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>

#include "bench_common.hpp"
#include "priorities.hpp"
#include "server.hpp"

int main(int argc, char** argv) {
  bench::args a(argc, argv);  // --key value; an unknown option exits with status 2
  proxy::server_options opt;
  opt.host = a.get_string("host", opt.host);
  const long port = a.get_long("port", 0);
  if (port < 0 || port > 65535) bench::args::fail("--port must be 0-65535");
  opt.port = static_cast<std::uint16_t>(port);
  const long cache_mib = a.get_long("cache-mib", 16);
  if (cache_mib < 0) bench::args::fail("--cache-mib must not be negative");
  opt.cache_bytes = static_cast<std::size_t>(cache_mib) << 20;
  promptly::runtime_config cfg;
  cfg.levels = proxy::order::size;
  if (long w = a.get_long("workers", 0); w > 0) cfg.workers = static_cast<unsigned>(w);
  cfg.policy = a.get_string("policy", "aps");
  cfg.aps.rho = 1.2;  // the I-Cilk paper ran its proxy with rho 1.2 (little parallelism per level)
  const std::string weights = a.get_string("fair-weights", "50,30,10,10,0");
  for (std::size_t pos = 0; pos <= weights.size();) {
    auto comma = weights.find(',', pos);
    if (comma == std::string::npos) comma = weights.size();
    cfg.fair.weights.push_back(std::stoll(weights.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  a.finish();

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    promptly::runtime rt{cfg};
    proxy::server srv(rt, opt);
    std::printf("LISTENING %u\n", static_cast<unsigned>(srv.port()));
    std::fflush(stdout);
    std::fprintf(stderr, "proxy_server: listening on %s:%u, %u workers, policy %s\n", opt.host.c_str(),
                 static_cast<unsigned>(srv.port()), rt.config().workers, cfg.policy.c_str());
    int sig = 0;
    sigwait(&stop_signals, &sig);
    srv.stop();
    std::fprintf(stderr, "proxy_server: stopped; %s\n", srv.stats_json().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "proxy_server: %s\n", e.what());
    return 1;
  }
  return 0;
}
