// Timers owned by the reactor thread: sleeping tasks park their fiber, not
// their worker.
//
//   io::sleep_for(5ms).get();
//   io::periodic_timer every(20ms);
//   for (;;) { std::uint64_t ticks = every.tick().get(); ... }
//
// Timers fire in deadline order (equal deadlines in the order they were
// started), never early. How late they are depends on the reactor's wake-up
// (a timerfd, nanosecond resolution) plus the time the runtime needs to run
// the woken task. A stop token cancels a pending sleep or tick with
// io::cancelled.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>

#include "promptly/future.hpp"

namespace promptly::io {

using clock = std::chrono::steady_clock;

// Completes when `t` has passed (at once if it already has).
[[nodiscard]] future<void> sleep_until(clock::time_point t, std::stop_token stop = {});

// Completes `d` after the call.
[[nodiscard]] future<void> sleep_for(std::chrono::nanoseconds d, std::stop_token stop = {});

// Ticks at first, first + period, first + 2 period, ... without drift: the
// schedule is fixed at construction, not computed from when a tick was
// observed. At most one tick() may be pending at a time.
class periodic_timer {
 public:
  // Throws std::invalid_argument unless period > 0.
  explicit periodic_timer(std::chrono::nanoseconds period);
  periodic_timer(std::chrono::nanoseconds period, clock::time_point first);
  periodic_timer(periodic_timer&&) noexcept = default;
  periodic_timer& operator=(periodic_timer&&) noexcept = default;
  ~periodic_timer();

  // Completes at the next scheduled tick with the number of ticks that
  // passed since the previous tick() completed: 1 normally, more when the
  // caller fell behind (missed ticks are coalesced, as a timerfd does).
  // Throws std::logic_error if a tick is already pending.
  [[nodiscard]] future<std::uint64_t> tick(std::stop_token stop = {});

  std::chrono::nanoseconds period() const noexcept;
  // The deadline of the next tick.
  clock::time_point next() const noexcept;

 public:
  struct state;  // shared with a pending tick (src/io/timers.cpp)

 private:
  std::shared_ptr<state> state_;
};

}  // namespace promptly::io
