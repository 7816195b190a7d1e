// ctx<Order, P>: the priority of the running code, known at compile time.
//
// A task body created at priority P receives a ctx<Order, P>; the ctx is the
// only way to create typed futures (fcreate) and to touch them (touch/get),
// so every touch happens where the toucher's priority is a type. This is
// the "command function" of "Responsive Parallelism with Futures and State"
// (PLDI 2020, Sec. 4.2), with the command's priority carried by a parameter
// instead of a wrapper class:
//
//   int lookup(promptly::typed::ctx<order, ui> c, int key);   // a command at ui
//
// Rule TOUCH (the futures-and-state paper, Sec. 3.1): code at P may touch a future<T, Q> only if
// Q is at least as urgent as P. Otherwise touch() fails to compile with
// priority_inversion_error<touching<Q>, from<P>>, which names both.
//
// Calling a command function directly (not through fcreate) runs it at the
// caller's priority (the futures-and-state paper, Sec. 4.2, last rule): it takes the caller's
// ctx. A ctx<Order, P2> converts to ctx<Order, P> when P is at least as
// urgent as P2, so a command declared at P may be called from code at P2:
// everything it may touch (futures at least as urgent as P) is then at least
// as urgent as P2 too. The other direction does not convert, since a command
// declared at a less urgent priority may touch futures the caller must not.
//
// Invariants
//  * Only the library makes a ctx out of nothing (detail::ctx_factory), and
//    only for a task that runs at level Order::level_of<P>: the typed entry
//    points run<Order, P> / submit<Order, P> and the bodies of fcreate<P>.
//  * A ctx that escapes its task (captured by a lambda that runs at another
//    priority, stored in shared data) is outside the checker's sight; see
//    docs/typed-priorities.md, "What the checker cannot see".
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "promptly/errors.hpp"
#include "promptly/typed/future.hpp"
#include "promptly/typed/priority_order.hpp"

namespace promptly::typed {

// Markers that make the diagnostic read "touching<low>, from<high>" (a touch)
// or "calling<low>, from<high>" (a call of a command declared at low).
template <class Q>
struct touching {};
template <class Q>
struct calling {};
template <class P>
struct from {};

// Instantiated by a touch that breaks rule TOUCH. Also named, never
// instantiated, by the deleted ctx conversion that rejects calling a
// command of a less urgent priority.
template <class Touching, class From>
struct priority_inversion_error {
  static_assert(sizeof(Touching) == 0,
                "promptly::typed: priority inversion: code running at priority P (from<P>) touches a future "
                "of priority Q (touching<Q>), but Q is not declared at least as urgent as P (it is less "
                "urgent, or unrelated in a partial order): rule TOUCH of docs/typed-priorities.md. Touch it from code at a "
                "priority no more urgent than Q, or declare promptly::before<Q, P> if that is the intent");
  static constexpr bool value = true;
};

namespace detail {
struct ctx_factory;

template <class Order, class Touched, class Toucher>
constexpr void check_touch() noexcept {
  if constexpr (!promptly::detail::require_priority<Order, Touched>())
    return;
  else if constexpr (!Order::template at_least_as_urgent<Touched, Toucher>)
    static_assert(priority_inversion_error<touching<Touched>, from<Toucher>>::value);
}
}  // namespace detail

template <class Order, class P>
class ctx {
  static_assert(promptly::detail::require_priority<Order, P>());

 public:
  using order = Order;
  using priority = P;
  // The runtime level this code runs at.
  static constexpr unsigned level = Order::template level_of<P>;

  // Calls a command declared at P from code at a less (or equally) urgent P2.
  template <class P2>
    requires(Order::template at_least_as_urgent<P, P2>)
  ctx(const ctx<Order, P2>&) noexcept {}
  // The other direction is a priority inversion: deleted, so that the
  // conversion does not exist (std::is_convertible is false) and the
  // compiler's "use of deleted function" names priority_inversion_error,
  // calling<P> and from<P2> with both priorities, and quotes this line:
  template <class P2>
    requires(!Order::template at_least_as_urgent<P, P2>)
  ctx(const ctx<Order, P2>&, priority_inversion_error<calling<P>, from<P2>> = {}) = delete;  // priority inversion: code at P2 calls a command declared at P, which is less urgent than P2 or unrelated to it, and may touch futures P2 must not wait on (rule TOUCH, docs/typed-priorities.md); create it as a task with fcreate<P> instead

  static constexpr std::string_view name() noexcept { return Order::template name_of<P>; }

  // ftouch: waits for f and returns a reference to its value (void for
  // future<void, Q>), or rethrows the task's exception. Compiles only if Q
  // is at least as urgent as P. Throws promptly::future_empty if f holds no
  // future (an empty cell was read; the futures-and-state paper, Sec. 4.2:
  // create before touching).
  template <class T, class Q>
  std::conditional_t<std::is_void_v<T>, void, const promptly::detail::stored_t<T>&> touch(const future<T, Q>& f) const {
    detail::check_touch<Order, Q, P>();
    require_valid(f);
    if constexpr (std::is_void_v<T>)
      (void)f.untyped().get();
    else
      return f.untyped().get();
  }
  // The same, moving the value out of the shared state (other handles then
  // see a moved-from value).
  template <class T, class Q>
  T touch(future<T, Q>&& f) const {
    detail::check_touch<Order, Q, P>();
    require_valid(f);
    return std::move(f).untyped().get();
  }

 private:
  friend struct detail::ctx_factory;
  ctx() noexcept = default;

  template <class T, class Q>
  static void require_valid(const future<T, Q>& f) {
    if (!f.valid())
      throw future_empty("promptly::typed: touching a future of priority '" + std::string(Order::template name_of<Q>) +
                         "' that holds no future (a default handle, or an empty future_cell was read); create "
                         "the future before touching it (docs/typed-priorities.md, well-formed programs)");
  }
};

namespace detail {
struct ctx_factory {
  template <class Ctx>
  static Ctx make() noexcept {
    return Ctx{};
  }
};
}  // namespace detail

}  // namespace promptly::typed
