// future<T, Q>: a handle to a future computed at priority Q (the
// `tau thread[rho]` of "Responsive Parallelism with Futures and State",
// PLDI 2020). A thin wrapper over promptly::future<T> (one pointer);
// copies share the state. It is touched through the toucher's ctx:
//
//   auto f = fcreate<fetch>(c, body);   // typed::future<int, fetch>
//   int v = c.touch(f);                 // or f.get(c)
//
// A default-constructed handle (also what reading an empty future_cell
// gives) holds no future: valid() is false and touching it throws
// promptly::future_empty.
//
// Invariant: a future<T, Q> that holds a state was made by fcreate<Q> (the
// task runs at level Order::level_of<Q>), read from a typed cell that was
// given such a future, or built by unsafe_future_cast<Q>, whose caller
// vouches for it.
#pragma once

#include <utility>

#include "promptly/future.hpp"

namespace promptly::typed {

template <class T, class Q>
class future;
template <class T, class Q>
class future_cell;

namespace detail {
struct typed_access {
  template <class T, class Q>
  static future<T, Q> wrap(promptly::future<T> f) noexcept {
    return future<T, Q>(std::move(f));
  }
  template <class T, class Q>
  static promptly::future<T>& untyped(future<T, Q>& f) noexcept {
    return f.f_;
  }
  template <class T, class Q>
  static auto& untyped(future_cell<T, Q>& c) noexcept {
    return c.cell_;
  }
};
}  // namespace detail

template <class T, class Q>
class future {
 public:
  using value_type = T;
  using priority = Q;

  future() noexcept = default;

  [[nodiscard]] bool valid() const noexcept { return f_.valid(); }
  explicit operator bool() const noexcept { return f_.valid(); }
  // The value or exception is available (a touch will not wait).
  [[nodiscard]] bool is_ready() const noexcept { return f_.is_ready(); }

  // Same as ctx.touch(*this): compiles only where the ctx's priority may
  // touch Q.
  template <class Ctx>
  decltype(auto) get(const Ctx& c) const& {
    return c.touch(*this);
  }
  template <class Ctx>
  T get(const Ctx& c) && {
    return c.touch(std::move(*this));
  }

  // The untyped handle. Touching it is not checked by the type system
  // (the run-time detector still sees it): docs/typed-priorities.md.
  [[nodiscard]] const promptly::future<T>& untyped() const& noexcept { return f_; }
  [[nodiscard]] promptly::future<T> untyped() && noexcept { return std::move(f_); }

  // Handles to the same future (or both empty).
  friend bool operator==(const future& a, const future& b) noexcept {
    return promptly::detail::future_access::state(a.f_) == promptly::detail::future_access::state(b.f_);
  }

 private:
  friend struct detail::typed_access;
  explicit future(promptly::future<T> f) noexcept : f_(std::move(f)) {}
  promptly::future<T> f_;
};

// Declares that `f` is computed at priority Q. Unchecked: if the task runs
// at a less urgent level, the type system is fooled (the futures-and-state
// paper, Sec. 4.2, "Discussion: Type Safety", rule 1); runtime_config::detect_inversions
// counts the inversions that follow.
template <class Q, class T>
[[nodiscard]] future<T, Q> unsafe_future_cast(promptly::future<T> f) noexcept {
  return detail::typed_access::wrap<T, Q>(std::move(f));
}

}  // namespace promptly::typed
