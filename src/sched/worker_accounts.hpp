// Reading a worker's time accounts from another thread (the policy driver's
// views, stats()): the phase interval it is in now, which the worker adds
// to its accounts only when the phase changes (scheduling_loop.cpp,
// set_phase). Relaxed reads: statistics.
#pragma once

#include <cstdint>

#include "worker.hpp"

namespace promptly::detail {

// The phase interval a worker is in now, not yet added to the accounts.
struct open_interval {
  std::uint32_t pool;
  bool working;
  std::uint64_t ns;
};

inline open_interval open_interval_of(const worker& w, std::uint64_t now) noexcept {
  const std::uint64_t since = w.phase_since_ns.load(std::memory_order_relaxed);
  return {w.serving.load(std::memory_order_relaxed), w.phase.load(std::memory_order_relaxed) == worker_phase::working,
          now > since ? now - since : 0};
}

inline double seconds_of(std::uint64_t ns) noexcept { return static_cast<double>(ns) * 1e-9; }

}  // namespace promptly::detail
