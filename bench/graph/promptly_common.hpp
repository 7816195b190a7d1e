// Runtime set-up shared by the Promptly programs of suite `graph`: --workers and --sleep
// (adaptive = seed 002's sleep protocol, never = the ABP-style baseline, runtime `promptly-nosleep`).
#pragma once

#include <promptly/graph.hpp>
#include <promptly/promptly.hpp>

#include "bench_common.hpp"

namespace bench::graph {

inline promptly::runtime_config promptly_config(args& a) {
    promptly::runtime_config cfg;
    cfg.workers = unsigned(a.get_long("workers", 2));
    const std::string sleep = a.get_string("sleep", "adaptive");
    if (sleep == "adaptive") cfg.sleep = promptly::sleep_mode::adaptive;
    else if (sleep == "never") cfg.sleep = promptly::sleep_mode::never;
    else args::fail("--sleep must be adaptive or never");
    return cfg;
}

}  // namespace bench::graph
