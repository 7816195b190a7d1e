// Future combinators at typed priorities: when_all, when_any and then for typed::future
// (docs/futures.md, "Priorities"). Each result is a typed future whose priority R follows rule
// TOUCH (docs/typed-priorities.md):
//
//   auto both = pt::when_all(c, ui_f, fetch_f);   // typed::future<tuple<future<int, ui>, future<int, fetch>>, fetch>
//   auto either = pt::when_any<batch>(c, fetch_f, log_f);     // fetch and log are unrelated: R named
//   auto next = pt::then(c, fetch_f, [](ctx<fetch>, const int& v) { return v + 1; });  // at fetch
//
// * when_all<R>(c, fs...) and when_any<R>(c, fs...): waiting on the result waits on the inputs,
//   so every input's priority must be at least as urgent as R; then code at P may touch the
//   result (R at least as urgent as P) only if it could touch every input (transitivity).
//   Without R, R is the least urgent input priority: the one every other input is at least as
//   urgent as. If there is none (inputs unrelated in a partial order), the call does not
//   compile: name R, a priority every input is at least as urgent as. when_any keeps the rule
//   of when_all, although its result is ready as soon as the first input is: the cost model
//   of the futures-and-state paper (Theorem 2.1) bounds a thread by everything it may wait
//   on, and a when_any may wait on its least urgent input when that one finishes first.
// * then<R>(c, f, fn): the continuation runs at R after f (priority Q) completed, so its
//   response time depends on Q's: Q must be at least as urgent as R (by default R = Q). fn
//   takes (ctx<Order, R>, the ready typed::future<T, Q>) or (ctx<Order, R>, const T&).
//
// Violations fail to compile with priority_inversion_error<touching<Q>, from<R>> (the
// result's priority R then plays the toucher) or combined_priority_error.
#pragma once

#include <concepts>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "promptly/future.hpp"
#include "promptly/level.hpp"
#include "promptly/typed/context.hpp"
#include "promptly/typed/future.hpp"

namespace promptly::typed {

// Instantiated by when_all / when_any without a result priority when the inputs' priorities
// have no least urgent one.
template <class... Qs>
struct combined_priority_error {
  static_assert(sizeof...(Qs) == 0,
                "promptly::typed::when_all / when_any: the input priorities (the template arguments) have no least "
                "urgent one (some are unrelated in the partial order), so the result's priority cannot be chosen: "
                "name it, when_all<R>(c, ...), with every input at least as urgent as R (rule TOUCH, "
                "docs/futures.md)");
  using type = void;
};

// The default result priority.
struct least_urgent_input {};

namespace detail {

// The first of Candidates that every one of All is at least as urgent as; void if none.
template <class Order, class All, class... Candidates>
struct least_urgent {
  using type = void;
};
template <class Order, class... All, class C, class... Rest>
struct least_urgent<Order, std::tuple<All...>, C, Rest...> {
  using type = std::conditional_t<(Order::template at_least_as_urgent<All, C> && ...), C,
                                  typename least_urgent<Order, std::tuple<All...>, Rest...>::type>;
};

template <class Order, class R, class... Qs>
struct result_priority {
  using type = R;
};
template <class Order, class... Qs>
struct result_priority<Order, least_urgent_input, Qs...> {
  using found = typename least_urgent<Order, std::tuple<Qs...>, Qs...>::type;
  using type = typename std::conditional_t<std::is_void_v<found>, combined_priority_error<Qs...>, std::type_identity<found>>::type;
};

// Every input may be waited on at R (rule TOUCH with R as the toucher).
template <class Order, class R, class... Qs>
constexpr void check_inputs() noexcept {
  (check_touch<Order, Qs, R>(), ...);
}

}  // namespace detail

template <class R = least_urgent_input, class Order, class P, class... T, class... Q>
  requires(sizeof...(T) >= 1)
[[nodiscard]] auto when_all(const ctx<Order, P>&, future<T, Q>... fs) {
  using Res = typename detail::result_priority<Order, R, Q...>::type;
  if constexpr (!std::is_void_v<Res>) {
    detail::check_inputs<Order, Res, Q...>();
    using Seq = std::tuple<future<T, Q>...>;
    promptly::detail::future_state_base* states[] = {promptly::detail::future_access::state(fs.untyped())...};
    auto f = promptly::detail::make_combined<Seq, false>(Seq(std::move(fs)...), states, sizeof...(T), "typed::when_all");
    return detail::typed_access::wrap<Seq, Res>(std::move(f));
  }
}

template <class R = least_urgent_input, class Order, class P, class... T, class... Q>
  requires(sizeof...(T) >= 1)
[[nodiscard]] auto when_any(const ctx<Order, P>&, future<T, Q>... fs) {
  using Res = typename detail::result_priority<Order, R, Q...>::type;
  if constexpr (!std::is_void_v<Res>) {
    detail::check_inputs<Order, Res, Q...>();
    using Seq = std::tuple<future<T, Q>...>;
    promptly::detail::future_state_base* states[] = {promptly::detail::future_access::state(fs.untyped())...};
    auto f = promptly::detail::make_combined<Seq, true>(Seq(std::move(fs)...), states, sizeof...(T), "typed::when_any");
    return detail::typed_access::wrap<when_any_result<Seq>, Res>(std::move(f));
  }
}

template <class R = void, class Order, class P, class T, class Q, class F>
[[nodiscard]] auto then(const ctx<Order, P>&, const future<T, Q>& f, F&& fn) {
  using Res = std::conditional_t<std::is_void_v<R>, Q, R>;
  using C = ctx<Order, Res>;
  using Fn = std::decay_t<F>;
  detail::check_touch<Order, Q, Res>();
  static_assert(std::invocable<Fn&, C, future<T, Q>> ||
                    (std::is_void_v<T> && std::invocable<Fn&, C>) ||
                    (!std::is_void_v<T> && std::invocable<Fn&, C, const promptly::detail::stored_t<T>&>),
                "promptly::typed::then(c, f, fn): fn must take (ctx<Order, R>, typed::future<T, Q>) or "
                "(ctx<Order, R>, const T&) (just the ctx for future<void, Q>)");
  if (!f.valid())
    throw future_empty("promptly::typed::then on a future of priority '" + std::string(Order::template name_of<Q>) +
                       "' that holds no future");
  auto body = [fn = Fn(std::forward<F>(fn))](promptly::future<T> ante) mutable -> decltype(auto) {
    const C c = detail::ctx_factory::make<C>();
    if constexpr (std::invocable<Fn&, C, future<T, Q>>) {
      return std::invoke(fn, c, detail::typed_access::wrap<T, Q>(std::move(ante)));
    } else if constexpr (std::is_void_v<T>) {
      ante.get();
      return std::invoke(fn, c);
    } else {
      return std::invoke(fn, c, ante.get());
    }
  };
  auto next = f.untyped().then(level{Order::template level_of<Res>}, std::move(body));
  using U = typename decltype(next)::value_type;
  return detail::typed_access::wrap<U, Res>(std::move(next));
}

}  // namespace promptly::typed
