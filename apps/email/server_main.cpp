// email_server: the email server as a program. Prints "LISTENING <port>" on stdout once it
// accepts connections; SIGINT or SIGTERM stop it cleanly (every acknowledged request is
// answered first) and it exits 0. See README.md for the protocol and the options.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "priorities.hpp"
#include "server.hpp"

namespace {

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "email_server: %s\n"
               "usage: email_server [--host 127.0.0.1] [--port 0] [--workers N] [--policy aps|prompt|fair|oblivious]\n"
               "                    [--fair-weights w0,w1,...] [--capacity 64] [--seed-messages 16]\n"
               "                    [--period-ms 250] [--chunk 10]\n",
               msg.c_str());
  std::exit(2);
}

long to_long(const std::string& key, const std::string& v) {
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < 0) usage_error("--" + key + " needs a non-negative integer, not '" + v + "'");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) usage_error("unexpected argument '" + a + "'");
    a = a.substr(2);
    if (auto eq = a.find('='); eq != std::string::npos) {
      kv[a.substr(0, eq)] = a.substr(eq + 1);
    } else {
      if (i + 1 >= argc) usage_error("missing value for --" + a);
      kv[a] = argv[++i];
    }
  }
  auto take = [&](const std::string& key, const std::string& def) {
    auto it = kv.find(key);
    if (it == kv.end()) return def;
    std::string v = it->second;
    kv.erase(it);
    return v;
  };

  email::server_options opt;
  opt.host = take("host", opt.host);
  opt.port = static_cast<std::uint16_t>(to_long("port", take("port", "0")));
  opt.capacity = static_cast<std::size_t>(to_long("capacity", take("capacity", std::to_string(opt.capacity))));
  opt.seed_messages = static_cast<std::size_t>(to_long("seed-messages", take("seed-messages", std::to_string(opt.seed_messages))));
  opt.period = std::chrono::milliseconds(to_long("period-ms", take("period-ms", "250")));
  opt.chunk = static_cast<std::size_t>(to_long("chunk", take("chunk", "10")));

  promptly::runtime_config cfg;
  cfg.levels = email::order::size;
  if (auto w = take("workers", ""); !w.empty()) cfg.workers = static_cast<unsigned>(to_long("workers", w));
  cfg.policy = take("policy", "aps");
  // fair: a criterion that favours the interactive levels (client loop, send) by default.
  std::string weights = take("fair-weights", "40,25,15,10,5,5");
  for (std::size_t pos = 0; pos <= weights.size();) {
    auto comma = weights.find(',', pos);
    if (comma == std::string::npos) comma = weights.size();
    cfg.fair.weights.push_back(static_cast<long long>(to_long("fair-weights", weights.substr(pos, comma - pos))));
    pos = comma + 1;
  }
  if (!kv.empty()) usage_error("unknown option --" + kv.begin()->first);

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
