// The open connections of an app's server, counted against a limit. Every open connection holds
// a task and its stack while it waits for its client, so a server that accepted without a bound
// could be made to map stacks until the kernel refuses (vm.max_map_count); past the limit the
// server says so and closes the connection instead (as Redis's maxclients, or nginx).
//
// Invariant: open() <= max at all times; each try_open() that returned true is matched by
// exactly one close() (the servers close from the object that owns the connection's slot).
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>

namespace apps {

class connection_limit {
 public:
  explicit connection_limit(std::size_t max) noexcept : max_(max) {}
  connection_limit(const connection_limit&) = delete;
  connection_limit& operator=(const connection_limit&) = delete;

  // Takes a slot; false (nothing taken) when `max` connections are open.
  [[nodiscard]] bool try_open() noexcept {
    // Relaxed: the count publishes no data; the CAS alone keeps it at most max_.
    std::size_t now = open_.load(std::memory_order_relaxed);
    do {
      if (now >= max_) return false;
    } while (!open_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
    return true;
  }
  void close() noexcept {
    [[maybe_unused]] const std::size_t before = open_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: as above
    assert(before > 0 && "close() matches a successful try_open()");
  }
  std::size_t max() const noexcept { return max_; }
  std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }  // relaxed: a statistic

 private:
  const std::size_t max_;
  std::atomic<std::size_t> open_{0};
};

}  // namespace apps
