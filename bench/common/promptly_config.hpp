// Runtime set-up shared by the Promptly workload programs: --workers, --yield-bound, --idle-yield-bound and --sleep
// (adaptive = the Taskflow executor paper's sleep protocol, never = the ABP-style baseline, runtime
// `promptly-nosleep`). Call before args::finish().
#pragma once

#include <promptly/promptly.hpp>

#include <stdexcept>

#include "bench_common.hpp"

namespace bench {

// --yield-bound N: runtime_config::yield_bound (an idle worker's yields before it sleeps);
// --idle-yield-bound N: runtime_config::idle_yield_bound (the same while no worker is active).
// 0, the default of both, keeps the runtime's.
inline void read_yield_bounds(args& a, promptly::runtime_config& cfg) {
    const long yield_bound = a.get_long("yield-bound", 0);
    if (yield_bound < 0) args::fail("--yield-bound must be >= 1 (0: the runtime's default)");
    if (yield_bound > 0) cfg.yield_bound = unsigned(yield_bound);
    const long idle_yield_bound = a.get_long("idle-yield-bound", 0);
    if (idle_yield_bound < 0) args::fail("--idle-yield-bound must be >= 1 (0: the runtime's default)");
    cfg.idle_yield_bound = unsigned(idle_yield_bound);
}

inline promptly::runtime_config promptly_config(args& a) {
    promptly::runtime_config cfg;
    cfg.workers = unsigned(a.get_long("workers", 2));
    try {
        cfg.sleep = promptly::parse_sleep_mode(a.get_string("sleep", "adaptive"));
    } catch (const std::invalid_argument& e) {
        args::fail(std::string("--sleep: ") + e.what());
    }
    read_yield_bounds(a, cfg);
    return cfg;
}

}  // namespace bench
