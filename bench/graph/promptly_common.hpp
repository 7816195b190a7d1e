// Runtime set-up shared by the Promptly programs of suite `graph`: --workers and --sleep
// (adaptive = the Taskflow executor paper's sleep protocol, never = the ABP-style baseline, runtime `promptly-nosleep`).
#pragma once

#include <promptly/graph.hpp>
#include <promptly/promptly.hpp>

#include "bench_common.hpp"
#include "promptly_config.hpp"

namespace bench::graph {

using bench::promptly_config;

}  // namespace bench::graph
