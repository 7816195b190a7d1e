// future_cell<T, Q>: an atomic slot for a future<T, Q> or "no future yet"
// ("Responsive Parallelism with Futures and State", PLDI 2020, Sec. 5.1: the
// email client keeps, per email, a slot that print and compress tasks swap
// their handles into with a CAS). Same operations
// and guarantees as promptly::future_cell<T> (promptly/future_cell.hpp,
// where the invariants are stated); the priority is part of the type, so a
// handle read from a cell is touched under rule TOUCH like any other.
//
//   promptly::typed::future_cell<void, compress> slot;   // empty
//   auto mine = fcreate_into(c, my_cell, body);          // publish, then start
//   auto prev = slot.load();
//   while (!slot.compare_exchange(prev, mine)) {}        // prev: the earlier op
//   if (prev) c.touch(prev);                             // wait for it
#pragma once

#include <utility>

#include "promptly/future_cell.hpp"
#include "promptly/typed/future.hpp"

namespace promptly::typed {

template <class T, class Q>
class future_cell {
 public:
  using value_type = T;
  using priority = Q;

  future_cell() noexcept = default;
  explicit future_cell(future<T, Q> f) noexcept : cell_(std::move(f).untyped()) {}

  // A handle to the future the cell holds, or an empty one (valid() false).
  [[nodiscard]] future<T, Q> load() const noexcept { return wrap(cell_.load()); }
  [[nodiscard]] bool holds_future() const noexcept { return cell_.holds_future(); }
  void store(future<T, Q> f) noexcept { cell_.store(std::move(f).untyped()); }
  future<T, Q> exchange(future<T, Q> f) noexcept { return wrap(cell_.exchange(std::move(f).untyped())); }
  // Stores `desired` if the cell holds the same future as `expected` (or
  // both are empty); else loads the cell into `expected`.
  bool compare_exchange(future<T, Q>& expected, future<T, Q> desired) noexcept {
    return cell_.compare_exchange(detail::typed_access::untyped(expected), std::move(desired).untyped());
  }

 private:
  friend struct detail::typed_access;
  static future<T, Q> wrap(promptly::future<T> f) noexcept { return detail::typed_access::wrap<T, Q>(std::move(f)); }
  promptly::future_cell<T> cell_;
};

}  // namespace promptly::typed
