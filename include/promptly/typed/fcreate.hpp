// Creating typed tasks: fcreate<Q> inside tasks, run / submit from outside.
//
//   fcreate<Q>(c, f, args...)       from code at any priority ("Responsive
//                                   Parallelism with Futures and State",
//                                   PLDI 2020, Sec. 4.2: fcreate is not a
//                                   command): runs
//                                   f(ctx<Order, Q>, args...) as a task at
//                                   level Order::level_of<Q>; returns future<T, Q>
//   fcreate_into(c, cell, f, ...)   the same for the cell's priority, but the
//                                   handle is stored into `cell` before the
//                                   task can start, so the body can find its
//                                   own handle there (I-Cilk's "allocate the
//                                   handle, pass it to fcreate", Sec. 4.1)
//   run<Order, P>(rt, f, args...)   from outside the runtime: runs f(ctx<Order,
//                                   P>, args...) at P and returns its result
//   submit<Order, P>(rt, f, ...)    the same, returning a promptly::future<T>
//                                   (an outside thread has no priority to check)
//
// A body may also ignore its ctx: f(args...) is accepted when f does not take
// a ctx first (it then creates and touches no typed futures).
//
// run and submit check that the runtime has at least Order::size levels and
// throw std::out_of_range naming both numbers otherwise.
#pragma once

#include <concepts>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "promptly/future.hpp"
#include "promptly/runtime.hpp"
#include "promptly/typed/context.hpp"
#include "promptly/typed/future.hpp"
#include "promptly/typed/future_cell.hpp"

namespace promptly::typed {

// F can be a task body at the priority of Ctx, with arguments A.
template <class F, class Ctx, class... A>
concept body_for = std::invocable<std::decay_t<F>&, Ctx, std::decay_t<A>...> ||
                   std::invocable<std::decay_t<F>&, std::decay_t<A>...>;

namespace detail {

template <class F, class Ctx, class... A>
struct body_result {
  using type = std::invoke_result_t<std::decay_t<F>&, std::decay_t<A>...>;
};
template <class F, class Ctx, class... A>
  requires std::invocable<std::decay_t<F>&, Ctx, std::decay_t<A>...>
struct body_result<F, Ctx, A...> {
  using type = std::invoke_result_t<std::decay_t<F>&, Ctx, std::decay_t<A>...>;
};

// The task a typed body runs as: hands the body a fresh ctx of its priority
// and its arguments (moved: a task runs once).
template <class Ctx, class F, class... A>
struct task_body {
  F fn;
  std::tuple<A...> args;
  auto operator()() -> typename body_result<F, Ctx, A...>::type {
    return std::apply(
        [this](A&... as) -> decltype(auto) {
          if constexpr (std::invocable<F&, Ctx, A...>)
            return std::invoke(fn, ctx_factory::make<Ctx>(), std::move(as)...);
          else
            return std::invoke(fn, std::move(as)...);
        },
        args);
  }
};

template <class Ctx, class F, class... A>
task_body<Ctx, std::decay_t<F>, std::decay_t<A>...> make_body(F&& f, A&&... a) {
  return {std::forward<F>(f), {std::forward<A>(a)...}};
}

template <class Order>
void require_levels(const runtime& rt) {
  if (Order::size > rt.config().levels)
    throw std::out_of_range("promptly::typed: the priority_order declares " + std::to_string(Order::size) +
                            " priorities but the runtime has " + std::to_string(rt.config().levels) +
                            " levels; raise runtime_config::levels");
}

// Creates the task of `body` at `level` on the calling worker, stores its
// handle into `cell` before anyone can run it, then makes it ready.
template <class T, class Body>
promptly::future<T> spawn_published(unsigned level, Body&& body, promptly::future_cell<T>& cell) {
  namespace pd = promptly::detail;
  pd::worker_view* w = pd::at_strand_boundary(pd::current_worker());  // create boundary
  if (w == nullptr)
    throw not_on_worker("promptly::typed::fcreate_into called outside a runtime's worker; use typed::run or typed::submit");
  promptly::future<T> handle;
  // The record holds two references: the queue's and this handle's, which
  // goes into the cell before anyone can run the task.
  pd::start_async<T>(*w->sched, w, level, pd::admission::from_task, std::forward<Body>(body), [&](pd::future_state<T>* state) noexcept {
    handle = pd::future_access::adopt(state);
    cell.store(handle);
  });
  return handle;
}

}  // namespace detail

template <class Q, class Order, class P, class F, class... A>
  requires body_for<F, ctx<Order, Q>, A...>
auto fcreate(const ctx<Order, P>&, F&& f, A&&... a) -> future<typename detail::body_result<F, ctx<Order, Q>, A...>::type, Q> {
  using T = typename detail::body_result<F, ctx<Order, Q>, A...>::type;
  auto body = detail::make_body<ctx<Order, Q>>(std::forward<F>(f), std::forward<A>(a)...);
  return detail::typed_access::wrap<T, Q>(promptly::async(level{Order::template level_of<Q>}, std::move(body)));
}

template <class Order, class P, class T, class Q, class F, class... A>
  requires body_for<F, ctx<Order, Q>, A...>
future<T, Q> fcreate_into(const ctx<Order, P>&, future_cell<T, Q>& cell, F&& f, A&&... a) {
  static_assert(std::is_same_v<T, typename detail::body_result<F, ctx<Order, Q>, A...>::type>,
                "promptly::typed::fcreate_into: the body's result type differs from the cell's value type");
  auto body = detail::make_body<ctx<Order, Q>>(std::forward<F>(f), std::forward<A>(a)...);
  return detail::typed_access::wrap<T, Q>(
      detail::spawn_published<T>(Order::template level_of<Q>, std::move(body), detail::typed_access::untyped(cell)));
}

template <class Order, class P, class F, class... A>
  requires body_for<F, ctx<Order, P>, A...>
auto run(runtime& rt, F&& f, A&&... a) -> typename detail::body_result<F, ctx<Order, P>, A...>::type {
  detail::require_levels<Order>(rt);
  return rt.run(level{Order::template level_of<P>}, detail::make_body<ctx<Order, P>>(std::forward<F>(f), std::forward<A>(a)...));
}

template <class Order, class P, class F, class... A>
  requires body_for<F, ctx<Order, P>, A...>
auto submit(runtime& rt, F&& f, A&&... a) -> promptly::future<typename detail::body_result<F, ctx<Order, P>, A...>::type> {
  detail::require_levels<Order>(rt);
  return rt.submit(level{Order::template level_of<P>}, detail::make_body<ctx<Order, P>>(std::forward<F>(f), std::forward<A>(a)...));
}

}  // namespace promptly::typed
