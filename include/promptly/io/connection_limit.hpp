// Counts a server's open connections against a limit. Every open connection
// holds a task (and, while it waits for its client, a fiber stack), so a
// server that accepts without a bound can be made to map stacks until the
// kernel refuses (vm.max_map_count), after which waiting tasks block their
// workers. listener::serve() takes serve_options::max_connections; a server
// with its own accept loop (a typed task, say) takes a slot per accepted
// connection with try_open(), refuses the connection when no slot is free
// (Redis's maxclients and nginx's worker_connections do the same), and
// gives the slot back when the connection ends: close(), or a `slot` held
// by whatever ends with the connection.
//
// Invariant: open() <= max() at all times; every try_open() that returned
// true is matched by exactly one close().
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>

namespace promptly::io {

class connection_limit {
 public:
  explicit connection_limit(std::size_t max) noexcept : max_(max) {}
  connection_limit(const connection_limit&) = delete;
  connection_limit& operator=(const connection_limit&) = delete;

  // Takes a slot; false (nothing taken) when max() connections are open.
  [[nodiscard]] bool try_open() noexcept {
    // Relaxed: the count publishes no data; the CAS alone keeps it at most max_.
    std::size_t now = open_.load(std::memory_order_relaxed);
    do {
      if (now >= max_) return false;
    } while (!open_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
    return true;
  }
  // Gives back a slot try_open() took.
  void close() noexcept {
    [[maybe_unused]] const std::size_t before = open_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: as above
    assert(before > 0 && "close() matches a successful try_open()");
  }
  // Gives back, when destroyed, a slot try_open() took; null: nothing.
  class slot {
   public:
    explicit slot(connection_limit* limit) noexcept : limit_(limit) {}
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    ~slot() {
      if (limit_) limit_->close();
    }

   private:
    connection_limit* limit_;
  };
  std::size_t max() const noexcept { return max_; }
  std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }  // relaxed: a statistic

 private:
  const std::size_t max_;
  std::atomic<std::size_t> open_{0};
};

}  // namespace promptly::io
