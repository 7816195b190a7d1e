// Coroutine tasks under typed priorities (docs/typed-priorities.md,
// docs/coroutines.md). A co::task cannot co_await a typed::future directly
// (it does not compile): it awaits it through the ctx of the priority it
// runs at, which checks rule TOUCH at compile time exactly as ctx::touch
// does:
//
//   co::task<std::size_t> handler(pt::ctx<order, high> c, io::descriptor& d, std::span<char> buf) {
//     auto n = pt::io::read(c, d, buf);          // typed::future<std::size_t, high>
//     co_return co_await co::touch(c, n);        // touching a <low> future here does not compile
//   }
//   auto f = co::spawn(c, handler(c, d, buf));   // from typed code at high: typed::future<std::size_t, high>
//
// A coroutine's ctx parameter names the priority its body runs at; co::spawn
// with a ctx (or co::spawn<Q>) runs it at that priority's level, so the two
// agree, as fcreate<Q> makes them agree for plain tasks.
#pragma once

#include <utility>

#include "promptly/co/task.hpp"
#include "promptly/typed/context.hpp"
#include "promptly/typed/future.hpp"

namespace promptly::co {

// co_await co::touch(c, f): waits for f without a fiber and returns its
// value (a reference to the shared value; the moved-out value for an
// rvalue f), or rethrows its exception. Compiles only if Q is at least as
// urgent as P (priority_inversion_error<touching<Q>, from<P>> otherwise).
template <class Order, class P, class T, class Q>
[[nodiscard]] auto touch(const typed::ctx<Order, P>&, const typed::future<T, Q>& f) {
  typed::detail::check_touch<Order, Q, P>();
  return detail::future_awaiter<T, false>(f.untyped());
}
template <class Order, class P, class T, class Q>
[[nodiscard]] auto touch(const typed::ctx<Order, P>&, typed::future<T, Q>&& f) {
  typed::detail::check_touch<Order, Q, P>();
  return detail::future_awaiter<T, true>(std::move(f).untyped());
}

// From typed code at P (a task or coroutine with ctx c): spawns t at the
// level of Q (default P) and returns its typed future. As with fcreate<Q>,
// any priority of the order may be created; touching it is what rule TOUCH
// restricts.
template <class Q = void, class Order, class P, class T>
[[nodiscard]] auto spawn(const typed::ctx<Order, P>&, task<T> t) {
  using R = std::conditional_t<std::is_void_v<Q>, P, Q>;
  static_assert(promptly::detail::require_priority<Order, R>());
  return typed::unsafe_future_cast<R>(spawn(level{Order::template level_of<R>}, std::move(t)));
}

}  // namespace promptly::co
