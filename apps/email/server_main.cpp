// email_server: the email server as a program. Prints "LISTENING <port>" on stdout once it
// accepts connections; SIGINT or SIGTERM stop it cleanly (every acknowledged request is
// answered first) and it exits 0. See README.md for the protocol and the options; a bad option
// exits with status 2 and a message naming it (bench_common.hpp's parser).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "priorities.hpp"
#include "server.hpp"

namespace {

long non_negative(bench::args& a, const std::string& key, long def) {
  long v = a.get_long(key, def);
  if (v < 0) bench::args::fail("--" + key + " must not be negative");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);  // --key value; an unknown option exits with status 2
  email::server_options opt;
  opt.host = a.get_string("host", opt.host);
  const long port = non_negative(a, "port", 0);
  if (port > 65535) bench::args::fail("--port must be at most 65535");
  opt.port = static_cast<std::uint16_t>(port);
  opt.capacity = static_cast<std::size_t>(non_negative(a, "capacity", static_cast<long>(opt.capacity)));
  opt.seed_messages = static_cast<std::size_t>(non_negative(a, "seed-messages", static_cast<long>(opt.seed_messages)));
  opt.period = std::chrono::milliseconds(non_negative(a, "period-ms", 250));
  opt.chunk = static_cast<std::size_t>(non_negative(a, "chunk", 10));

  promptly::runtime_config cfg;
  cfg.levels = email::order::size;
  if (long w = non_negative(a, "workers", 0); w > 0) cfg.workers = static_cast<unsigned>(w);
  cfg.policy = a.get_string("policy", "aps");
  // fair: a criterion that favours the interactive levels (client loop, send) by default.
  const std::string weights = a.get_string("fair-weights", "40,25,15,10,5,5");
  for (std::size_t pos = 0; pos <= weights.size();) {
    auto comma = weights.find(',', pos);
    if (comma == std::string::npos) comma = weights.size();
    char* end = nullptr;
    const std::string w = weights.substr(pos, comma - pos);
    cfg.fair.weights.push_back(std::strtoll(w.c_str(), &end, 10));
    if (w.empty() || *end != '\0') bench::args::fail("--fair-weights needs integers separated by commas, not '" + weights + "'");
    pos = comma + 1;
  }
  a.finish();

  // SIGINT/SIGTERM are blocked in every thread (the runtime's threads inherit the mask) and
  // taken by sigwait below, so a signal never interrupts a worker.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  try {
    promptly::runtime rt{cfg};
    email::server srv(rt, opt);
    std::printf("LISTENING %u\n", static_cast<unsigned>(srv.port()));
    std::fflush(stdout);
    std::fprintf(stderr, "email_server: listening on %s:%u, %u workers, policy %s\n", opt.host.c_str(),
                 static_cast<unsigned>(srv.port()), rt.config().workers, cfg.policy.c_str());
    int sig = 0;
    sigwait(&stop_signals, &sig);
    srv.stop();
    std::fprintf(stderr, "email_server: stopped (%s); %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM", srv.stats_json().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "email_server: %s\n", e.what());
    return 1;
  }
  return 0;
}
