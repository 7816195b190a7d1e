// What the apps' server programs share: the runtime options every one of them takes, and
// serving until SIGINT or SIGTERM.
#pragma once

#include <cstdio>
#include <exception>
#include <string>

#include <promptly/promptly.hpp>

#include "bench_common.hpp"

namespace apps {

// Reads --workers (default: every CPU), --policy (default aps) and --fair-weights (one integer
// per level, comma-separated; `default_weights` favours the app's interactive levels) into a
// configuration with `levels` levels. A malformed value exits with status 2 naming the option.
promptly::runtime_config runtime_options(bench::args& a, unsigned levels, const std::string& default_weights);

// Blocks SIGINT and SIGTERM in the calling thread, so in every thread it starts afterwards (the
// runtime's workers inherit the mask) and a signal never interrupts a worker. Call it before
// creating the runtime.
void block_stop_signals();

// Waits for SIGINT or SIGTERM (blocked by block_stop_signals); returns its name.
const char* wait_for_stop_signal();

// The body of a server program: block the stop signals, create the runtime and the server,
// print "LISTENING <port>" on stdout, wait for a stop signal, stop the server, print its
// statistics. Returns the exit status (1 after an exception, which is printed).
template <class Server, class Options>
int serve_until_stopped(const char* program, const promptly::runtime_config& cfg, const Options& options) {
  block_stop_signals();
  try {
    promptly::runtime rt{cfg};
    Server srv(rt, options);
    std::printf("LISTENING %u\n", static_cast<unsigned>(srv.port()));
    std::fflush(stdout);
    std::fprintf(stderr, "%s: listening on %s:%u, %u workers, policy %s\n", program, options.host.c_str(),
                 static_cast<unsigned>(srv.port()), rt.config().workers, cfg.policy.c_str());
    const char* sig = wait_for_stop_signal();
    srv.stop();
    std::fprintf(stderr, "%s: stopped (%s); %s\n", program, sig, srv.stats_json().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  return 0;
}

}  // namespace apps
