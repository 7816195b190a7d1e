// When an I/O operation gives up: every operation takes an optional
// deadline, given as a point of std::chrono::steady_clock or as a timeout
// relative to the call:
//
//   io::read(d, buf)                      no deadline
//   io::read(d, buf, 50ms)                fails with io::timed_out 50 ms after the call
//   io::read(d, buf, clock::now() + 1s)   an absolute deadline shared by several calls
//
// A deadline that has already passed still lets the operation try once
// without waiting: it succeeds if it can complete at once.
#pragma once

#include <chrono>

namespace promptly::io {

class deadline {
 public:
  using clock = std::chrono::steady_clock;

  constexpr deadline() noexcept = default;  // none
  constexpr deadline(clock::time_point at) noexcept : at_(at) {}
  template <class Rep, class Period>
  deadline(std::chrono::duration<Rep, Period> timeout) : at_(after(timeout)) {}

  static constexpr deadline none() noexcept { return {}; }

  constexpr bool is_set() const noexcept { return at_ != clock::time_point::max(); }
  constexpr clock::time_point at() const noexcept { return at_; }

 private:
  template <class Rep, class Period>
  static clock::time_point after(std::chrono::duration<Rep, Period> timeout) {
    const auto now = clock::now();
    const auto left = clock::time_point::max() - now;
    if (timeout <= timeout.zero()) return now;
    // Compared in floating point: converting e.g. hours::max() to the clock's
    // nanoseconds would overflow.
    if (std::chrono::duration<double>(timeout) >= std::chrono::duration<double>(left)) return clock::time_point::max();
    return now + std::chrono::ceil<clock::duration>(timeout);
  }

  clock::time_point at_ = clock::time_point::max();
};

}  // namespace promptly::io
