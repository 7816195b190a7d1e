// I/O at a typed priority: the operations of promptly/io.hpp, called with the caller's ctx,
// return typed futures, so rule TOUCH covers I/O futures as it covers task futures (the
// futures-and-state paper's I/O futures carry a priority, Sec. 4.1):
//
//   namespace tio = promptly::typed::io;
//   auto n = tio::read(c, d, buf);            // typed::future<std::size_t, P>, P = c's priority
//   auto m = tio::read<batch>(c, d, buf);     // typed::future<std::size_t, batch>
//   c.touch(n);                               // fine; touching m from code more urgent than
//                                             // batch does not compile (priority inversion)
//
// Every function takes the ctx first, then exactly the arguments of the promptly::io
// function of the same name, and returns that function's future as a typed::future<T, Q>.
// Q defaults to the ctx's priority; any priority of the order may be named (creating is not
// restricted, touching is), e.g. to hand the future to less urgent code through a
// future_cell.
//
// What the priority is, for I/O: the reactor completes an operation whatever the levels, and
// a task waiting on it resumes at its own level; Q is the priority the program declares for
// the operation's result. TOUCH then keeps code from waiting on I/O declared less urgent than
// itself, and the handle can be stored in typed cells next to task futures. The run-time
// detector (runtime_config::detect_inversions) sees them as it sees task futures: each
// operation records Order::level_of<Q> in its future's state when it creates it
// (inversion_detector.hpp, label_level), so a touch that gets around the types (an untyped()
// handle, an escaped ctx) from a task more urgent than Q is counted. Futures of the untyped
// promptly::io functions still record no level.
//
// Errors: as promptly::io (io::error and its subclasses, rethrown by the touch).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "promptly/io.hpp"
#include "promptly/typed/context.hpp"
#include "promptly/typed/future.hpp"
#include "promptly/typed/inversion_detector.hpp"

namespace promptly::typed::io {

namespace detail {

// The priority of an operation: Q, or the caller's P when Q is void.
template <class Q, class P>
using io_priority = std::conditional_t<std::is_void_v<Q>, P, Q>;

// Wraps the future of an operation created at priority io_priority<Q, P>, and records that
// priority's level in its state for the run-time detector (f is still the only handle).
template <class Q, class Order, class P, class T>
[[nodiscard]] future<T, io_priority<Q, P>> at(const ctx<Order, P>&, promptly::future<T> f) {
  static_assert(promptly::detail::require_priority<Order, io_priority<Q, P>>());
  promptly::detail::label_level<Order::template level_of<io_priority<Q, P>>>(f);
  return unsafe_future_cast<io_priority<Q, P>>(std::move(f));  // an I/O future has no task to mislabel
}

}  // namespace detail

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto read(const ctx<Order, P>& c, promptly::io::descriptor& d, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::read(d, std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::read(d, std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto write(const ctx<Order, P>& c, promptly::io::descriptor& d, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::write(d, std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::write(d, std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto recv(const ctx<Order, P>& c, promptly::io::descriptor& d, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::recv(d, std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::recv(d, std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto send(const ctx<Order, P>& c, promptly::io::descriptor& d, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::send(d, std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::send(d, std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto accept(const ctx<Order, P>& c, promptly::io::descriptor& listening, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::accept(listening, std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::accept(listening, std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto connect_tcp(const ctx<Order, P>& c, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::connect_tcp(std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::connect_tcp(std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto connect_unix(const ctx<Order, P>& c, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::connect_unix(std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::connect_unix(std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto read_line(const ctx<Order, P>& c, promptly::io::line_reader& r, A&&... args)
    -> decltype(detail::at<Q>(c, r.read_line(std::forward<A>(args)...))) {
  return detail::at<Q>(c, r.read_line(std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto sleep_for(const ctx<Order, P>& c, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::sleep_for(std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::sleep_for(std::forward<A>(args)...));
}

template <class Q = void, class Order, class P, class... A>
[[nodiscard]] auto sleep_until(const ctx<Order, P>& c, A&&... args)
    -> decltype(detail::at<Q>(c, promptly::io::sleep_until(std::forward<A>(args)...))) {
  return detail::at<Q>(c, promptly::io::sleep_until(std::forward<A>(args)...));
}

}  // namespace promptly::typed::io
