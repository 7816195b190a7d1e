#include "app_main.hpp"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>

namespace apps {
namespace {
sigset_t stop_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}
}  // namespace

promptly::runtime_config runtime_options(bench::args& a, unsigned levels, const std::string& default_weights) {
  promptly::runtime_config cfg;
  cfg.levels = levels;
  const long workers = a.get_long("workers", 0);
  if (workers < 0) bench::args::fail("--workers must not be negative");
  if (workers > 0) cfg.workers = static_cast<unsigned>(workers);
  cfg.policy = a.get_string("policy", "aps");
  const std::string weights = a.get_string("fair-weights", default_weights);
  for (std::size_t pos = 0; pos <= weights.size();) {
    auto comma = weights.find(',', pos);
    if (comma == std::string::npos) comma = weights.size();
    const std::string w = weights.substr(pos, comma - pos);
    char* end = nullptr;
    cfg.fair.weights.push_back(std::strtoll(w.c_str(), &end, 10));
    if (w.empty() || *end != '\0') bench::args::fail("--fair-weights needs integers separated by commas, not '" + weights + "'");
    pos = comma + 1;
  }
  return cfg;
}

void block_stop_signals() {
  sigset_t s = stop_signals();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

const char* wait_for_stop_signal() {
  sigset_t s = stop_signals();
  int sig = 0;
  sigwait(&s, &sig);
  return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace apps
