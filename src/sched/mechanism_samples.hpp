// Timings of the scheduler's mechanism, per worker (AMCilk, Sec. 5.1
// measures the same operations of its job server: reallocation split into
// decision, sleep and wake, resumption, and mugging vs stealing).
//
// Invariants
//  * One writer per ring: a worker records only into its own samples, on its
//    own thread (fibers migrate, but a record names the worker that runs it).
//  * Readers (runtime::stats) may read while the worker writes: every slot
//    is an atomic, so a reader sees old or new samples, never a torn one; a
//    summary is a statistic, not a snapshot.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "promptly/stats.hpp"

namespace promptly::detail {

std::uint64_t now_ns() noexcept;  // steady clock (scheduler.cpp)

// Nanoseconds since a now_ns() stamp (0 if the clock reads earlier).
inline std::uint64_t elapsed_since(std::uint64_t start_ns) noexcept {
  const std::uint64_t now = now_ns();
  return now > start_ns ? now - start_ns : 0;
}

enum class mechanism_op : unsigned { realloc, sleep, wake, resume, mug, steal, preempt };
inline constexpr std::size_t mechanism_op_count = 7;

class mechanism_samples {
 public:
  static constexpr std::size_t kept = 512;  // most recent samples per operation

  void record(mechanism_op op, std::uint64_t ns) noexcept {
    const auto i = static_cast<std::size_t>(op);
    // Relaxed: statistics with a single writer (see the invariants).
    const std::uint64_t n = next_[i].load(std::memory_order_relaxed);
    const auto clipped = static_cast<std::uint32_t>(std::min<std::uint64_t>(ns, std::numeric_limits<std::uint32_t>::max()));
    ring_[i][n % kept].store(clipped, std::memory_order_relaxed);
    next_[i].store(n + 1, std::memory_order_relaxed);
  }

  // Appends this worker's samples of `op`, in nanoseconds.
  void collect(mechanism_op op, std::vector<std::uint32_t>& out) const {
    const auto i = static_cast<std::size_t>(op);
    const std::uint64_t n = std::min<std::uint64_t>(next_[i].load(std::memory_order_relaxed), kept);  // relaxed: a statistic
    for (std::uint64_t k = 0; k < n; ++k) out.push_back(ring_[i][k].load(std::memory_order_relaxed));
  }

 private:
  std::array<std::array<std::atomic<std::uint32_t>, kept>, mechanism_op_count> ring_{};
  std::array<std::atomic<std::uint64_t>, mechanism_op_count> next_{};
};

// Quantiles of samples in nanoseconds (sorts them).
inline overhead_stats summarize_ns(std::vector<std::uint32_t>& ns) {
  overhead_stats s;
  s.samples = ns.size();
  if (ns.empty()) return s;
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    const auto k = static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1) + 0.5);
    return static_cast<double>(ns[k]) * 1e-3;
  };
  s.p50_us = at(0.5);
  s.p95_us = at(0.95);
  s.p99_us = at(0.99);
  s.max_us = static_cast<double>(ns.back()) * 1e-3;
  return s;
}

}  // namespace promptly::detail
