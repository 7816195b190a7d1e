// Defaults and validation of runtime_config.
#include "promptly/config.hpp"
#include "promptly/ext/policy.hpp"
#include "../io/backend.hpp"
#include "../sched/os_time_slice.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace promptly {
namespace {

// CPU quota of this process's cgroup, in CPUs (rounded up), or 0 if none.
// cgroup v2: cpu.max holds "QUOTA PERIOD" or "max PERIOD"; v1: the two
// cfs files. (Go's GOMAXPROCS and TooManyCooks read the same files.)
unsigned cgroup_cpu_limit() {
  auto ceil_div = [](double quota, double period) -> unsigned {
    if (quota <= 0 || period <= 0) return 0;
    return static_cast<unsigned>(std::ceil(quota / period));
  };
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  if (v2) {
    std::string quota;
    double period = 0;
    if (v2 >> quota >> period && quota != "max") return ceil_div(std::stod(quota), period);
    return 0;
  }
  std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  std::ifstream p("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double quota = 0, period = 0;
  if (q >> quota && p >> period) return ceil_div(quota, period);
  return 0;
}

}  // namespace

unsigned default_worker_count() {
  unsigned n = 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  if (unsigned limit = cgroup_cpu_limit(); limit > 0) n = std::min(n, limit);
  return n;
}

void validate(const runtime_config& cfg) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("promptly::runtime_config: " + what); };
  if (cfg.workers > 4096) fail("workers = " + std::to_string(cfg.workers) + " exceeds the limit of 4096");
  if (cfg.fiber_stack_bytes < 16 * 1024)
    fail("fiber_stack_bytes = " + std::to_string(cfg.fiber_stack_bytes) + " is below the minimum of 16384");
  if (cfg.yield_bound == 0) fail("yield_bound must be >= 1");
  if (cfg.sentinel_nap.count() <= 0) fail("sentinel_nap must be > 0");
  if (cfg.preemption.threshold < std::chrono::microseconds{50} || cfg.preemption.threshold > std::chrono::seconds{1})
    fail("preemption.threshold = " + std::to_string(cfg.preemption.threshold.count()) + " us must be in 50..1000000");
  if (cfg.preemption.standby_threads < 1 || cfg.preemption.standby_threads > 64)
    fail("preemption.standby_threads = " + std::to_string(cfg.preemption.standby_threads) + " must be in 1..64");
  // The kernel's bounds (it would clamp silently; os_time_slice.hpp).
  if (!detail::valid_os_time_slice(cfg.os_time_slice))
    fail("os_time_slice = " + std::to_string(cfg.os_time_slice.count()) + " us must be 0 (the kernel's default) or in " +
         std::to_string(detail::min_os_time_slice.count()) + ".." + std::to_string(detail::max_os_time_slice.count()) +
         " us");
  if (cfg.sleep != sleep_mode::adaptive && cfg.sleep != sleep_mode::never) fail("unknown sleep_mode");
  if (cfg.levels == 0 || cfg.levels > max_levels)
    fail("levels = " + std::to_string(cfg.levels) + " must be in 1.." + std::to_string(max_levels));
  // The criterion is checked even when another policy runs: set_policy("fair") must not fail later.
  if (cfg.fair.round.count() <= 0) fail("fair.round must be > 0");
  if (cfg.fair.sampling != fair_sampling::systematic && cfg.fair.sampling != fair_sampling::independent)
    fail("fair.sampling = " + std::to_string(static_cast<int>(cfg.fair.sampling)) +
         " is not a fair_sampling (systematic or independent)");
  try {
    (void)ext::fair_shares(cfg.fair.weights, cfg.levels);
  } catch (const std::invalid_argument& e) {
    fail(std::string("fair.weights: ") + e.what());
  }
  try {
    (void)io::detail::parse_backend(cfg.io_backend);
  } catch (const std::invalid_argument&) {
    fail("io_backend = '" + cfg.io_backend + "' must be auto, epoll or io_uring");
  }
  if (cfg.io_worker_poll_us < -1 || cfg.io_worker_poll_us > io::detail::max_worker_poll_us)
    fail("io_worker_poll_us = " + std::to_string(cfg.io_worker_poll_us) + " must be -1 (the default) or 0.." +
         std::to_string(io::detail::max_worker_poll_us));
  try {
    (void)ext::make_policy(cfg.policy, cfg.aps, cfg.fair);
  } catch (const std::invalid_argument& e) {
    fail(std::string("policy: ") + e.what());
  }
}

std::string to_string(sleep_mode m) { return m == sleep_mode::adaptive ? "adaptive" : "never"; }

sleep_mode parse_sleep_mode(const std::string& name) {
  if (name == "adaptive") return sleep_mode::adaptive;
  if (name == "never") return sleep_mode::never;
  throw std::invalid_argument("promptly: unknown sleep mode '" + name + "' (expected 'adaptive' or 'never')");
}

}  // namespace promptly
