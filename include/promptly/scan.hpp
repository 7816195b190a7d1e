// Parallel prefix sums (docs/algorithms.md):
//
//   parallel_inclusive_scan(first, last, out[, op[, init]])                 out[i] = x0 op ... op xi
//   parallel_exclusive_scan(first, last, out, init[, op])                   out[i] = init op x0 op ... op x(i-1)
//   parallel_transform_inclusive_scan(first, last, out, op, unary[, init])  the same over unary(x)
//   parallel_transform_exclusive_scan(first, last, out, init, op, unary)
//   ... and each with a random-access range in place of (first, last)
//
// Each returns out + (last - first). op must be associative (not commutative: the operands
// keep their order); std::plus<> is the default. out may equal first (in place); otherwise the
// two ranges must not overlap. Inputs and outputs are random-access.
//
// The algorithm is the two-pass work-efficient scan (Blelloch, "Prefix Sums and Their
// Applications", 1990, Sec. 1.2, with blocks as leaves): the input is cut into at most
// scan_max_blocks blocks of at least scan_min_block elements; pass 1 reduces every block but
// the last in parallel, a sequential scan over the block sums gives each block its prefix, and
// pass 2 scans every block in parallel from its prefix. About 2n applications of op (n for one
// block), span O(n / blocks + blocks). unary may be called twice per element, so it must be a
// pure function of its argument.
//
// Each also takes a cancellation token (a std::stop_token) as its first argument
// (cancellation.hpp). Exceptions and cancellation: the first exception (in time) from op, unary
// or a copy stops the blocks not yet started and propagates after every started block
// finished; a stop request that skipped blocks throws promptly::cancelled. out then holds an
// unspecified mix of old and new values.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "promptly/cancellation.hpp"
#include "promptly/default_runtime.hpp"
#include "promptly/parallel.hpp"

namespace promptly {

namespace detail {

inline constexpr std::size_t scan_min_block = std::size_t{1} << 14;
inline constexpr std::size_t scan_max_blocks = 256;

// out[k] = prefix op x0 op ... op xk over [b, e) (prefix absent: x0 op ... op xk).
// Each input is read before its output is written, so out may equal b.
template <class T, class In, class Out, class Op, class Unary>
void inclusive_block(In b, In e, Out o, const std::optional<T>& prefix, Op& op, Unary& unary) {
  if (b == e) return;
  T acc = prefix ? T(std::invoke(op, *prefix, std::invoke(unary, *b))) : T(std::invoke(unary, *b));
  *o = acc;
  for (++b, ++o; b != e; ++b, ++o) {
    acc = std::invoke(op, std::move(acc), std::invoke(unary, *b));
    *o = acc;
  }
}

// out[k] = prefix op x0 op ... op x(k-1) over [b, e).
template <class T, class In, class Out, class Op, class Unary>
void exclusive_block(In b, In e, Out o, const T& prefix, Op& op, Unary& unary) {
  T acc = prefix;
  for (; b != e; ++b, ++o) {
    T next(std::invoke(op, std::as_const(acc), std::invoke(unary, *b)));
    *o = std::move(acc);
    acc = std::move(next);
  }
}

// x0 op ... op x(n-1) over a non-empty [b, e).
template <class T, class In, class Op, class Unary>
T fold_block(In b, In e, Op& op, Unary& unary) {
  T acc(std::invoke(unary, *b));
  for (++b; b != e; ++b) acc = std::invoke(op, std::move(acc), std::invoke(unary, *b));
  return acc;
}

// The scans: `init` is the exclusive scan's start, or the inclusive scan's optional one.
template <class T, class In, class Out, class Op, class Unary>
Out scan(cancellation_token stop, In first, In last, Out out, std::optional<T> init, bool inclusive, Op& op,
         Unary& unary) {
  const auto n = static_cast<std::size_t>(last - first);
  const std::size_t block = std::max(scan_min_block, (n + scan_max_blocks - 1) / scan_max_blocks);
  const std::size_t blocks = (n + block - 1) / block;
  using D = std::iter_difference_t<In>;
  using E = std::iter_difference_t<Out>;
  auto run_block = [&](std::size_t j, const std::optional<T>& prefix) {
    const In b = first + static_cast<D>(j * block);
    const In e = first + static_cast<D>(std::min(n, (j + 1) * block));
    const Out o = out + static_cast<E>(j * block);
    if (inclusive)
      inclusive_block(b, e, o, prefix, op, unary);
    else
      exclusive_block(b, e, o, *prefix, op, unary);
  };
  const char* what = inclusive ? "parallel_inclusive_scan" : "parallel_exclusive_scan";
  cancel_scope scope(std::move(stop));
  if (blocks <= 1) {  // one block: sequential, on the caller
    scope.run([&] { run_block(0, init); });
    scope.finish(what);
    return out + static_cast<E>(n);
  }
  run_data_parallel([&] {  // outside a runtime: on the default runtime
    // prefix[j]: what block j starts from. Pass 1 leaves block j-1's sum there.
    std::vector<std::optional<T>> prefix(blocks);
    auto reduce_blocks = [&](std::size_t lo, std::size_t hi) {
      for (std::size_t j = lo; j != hi; ++j) {
        const In b = first + static_cast<D>(j * block);
        prefix[j + 1].emplace(fold_block<T>(b, b + static_cast<D>(block), op, unary));
      }
    };
    split_range(std::size_t{0}, blocks - 1, 1, reduce_blocks, scope);
    scope.run([&] {
      prefix[0] = std::move(init);
      for (std::size_t j = 1; j < blocks; ++j)
        if (prefix[j - 1]) prefix[j] = T(std::invoke(op, std::as_const(*prefix[j - 1]), std::move(*prefix[j])));
    });
    auto scan_blocks = [&](std::size_t lo, std::size_t hi) {
      for (std::size_t j = lo; j != hi; ++j) run_block(j, prefix[j]);
    };
    split_range(std::size_t{0}, blocks, 1, scan_blocks, scope);
  });
  scope.finish(what);
  return out + static_cast<E>(n);
}

template <class In, class Unary>
using scan_value_t = std::decay_t<std::invoke_result_t<Unary&, std::iter_reference_t<In>>>;

}  // namespace detail

template <std::random_access_iterator In, std::random_access_iterator Out, class Op, class Unary>
Out parallel_transform_inclusive_scan(cancellation_token stop, In first, In last, Out out, Op op, Unary unary) {
  using T = detail::scan_value_t<In, Unary>;
  return detail::scan<T>(std::move(stop), first, last, out, std::nullopt, true, op, unary);
}

template <std::random_access_iterator In, std::random_access_iterator Out, class Op, class Unary, class T>
Out parallel_transform_inclusive_scan(cancellation_token stop, In first, In last, Out out, Op op, Unary unary, T init) {
  return detail::scan<T>(std::move(stop), first, last, out, std::optional<T>(std::move(init)), true, op, unary);
}

template <std::random_access_iterator In, std::random_access_iterator Out, class T, class Op, class Unary>
Out parallel_transform_exclusive_scan(cancellation_token stop, In first, In last, Out out, T init, Op op, Unary unary) {
  return detail::scan<T>(std::move(stop), first, last, out, std::optional<T>(std::move(init)), false, op, unary);
}

template <std::random_access_iterator In, std::random_access_iterator Out, class Op = std::plus<>>
Out parallel_inclusive_scan(cancellation_token stop, In first, In last, Out out, Op op = {}) {
  return promptly::parallel_transform_inclusive_scan(std::move(stop), first, last, out, std::move(op), std::identity{});
}

template <std::random_access_iterator In, std::random_access_iterator Out, class Op, class T>
Out parallel_inclusive_scan(cancellation_token stop, In first, In last, Out out, Op op, T init) {
  return promptly::parallel_transform_inclusive_scan(std::move(stop), first, last, out, std::move(op), std::identity{}, std::move(init));
}

template <std::random_access_iterator In, std::random_access_iterator Out, class T, class Op = std::plus<>>
Out parallel_exclusive_scan(cancellation_token stop, In first, In last, Out out, T init, Op op = {}) {
  return promptly::parallel_transform_exclusive_scan(std::move(stop), first, last, out, std::move(init), std::move(op), std::identity{});
}

// Range forms.
template <std::ranges::random_access_range R, std::random_access_iterator Out, class Op = std::plus<>>
  requires std::ranges::common_range<R>
Out parallel_inclusive_scan(cancellation_token stop, R&& r, Out out, Op op = {}) {
  return promptly::parallel_inclusive_scan(std::move(stop), std::ranges::begin(r), std::ranges::end(r), out, std::move(op));
}

template <std::ranges::random_access_range R, std::random_access_iterator Out, class T, class Op = std::plus<>>
  requires std::ranges::common_range<R>
Out parallel_exclusive_scan(cancellation_token stop, R&& r, Out out, T init, Op op = {}) {
  return promptly::parallel_exclusive_scan(std::move(stop), std::ranges::begin(r), std::ranges::end(r), out, std::move(init), std::move(op));
}

template <std::ranges::random_access_range R, std::random_access_iterator Out, class Op, class Unary>
  requires std::ranges::common_range<R>
Out parallel_transform_inclusive_scan(cancellation_token stop, R&& r, Out out, Op op, Unary unary) {
  return promptly::parallel_transform_inclusive_scan(std::move(stop), std::ranges::begin(r), std::ranges::end(r), out, std::move(op),
                                                     std::move(unary));
}

template <std::ranges::random_access_range R, std::random_access_iterator Out, class T, class Op, class Unary>
  requires std::ranges::common_range<R>
Out parallel_transform_exclusive_scan(cancellation_token stop, R&& r, Out out, T init, Op op, Unary unary) {
  return promptly::parallel_transform_exclusive_scan(std::move(stop), std::ranges::begin(r), std::ranges::end(r), out, std::move(init),
                                                     std::move(op), std::move(unary));
}

// The same without a token.
template <class First, class... Args>
  requires(!std::same_as<std::remove_cvref_t<First>, cancellation_token>) &&
          requires(First&& f, Args&&... a) {
            promptly::parallel_inclusive_scan(cancellation_token{}, std::forward<First>(f), std::forward<Args>(a)...);
          }
auto parallel_inclusive_scan(First&& first, Args&&... args) {
  return promptly::parallel_inclusive_scan(cancellation_token{}, std::forward<First>(first), std::forward<Args>(args)...);
}

template <class First, class... Args>
  requires(!std::same_as<std::remove_cvref_t<First>, cancellation_token>) &&
          requires(First&& f, Args&&... a) {
            promptly::parallel_exclusive_scan(cancellation_token{}, std::forward<First>(f), std::forward<Args>(a)...);
          }
auto parallel_exclusive_scan(First&& first, Args&&... args) {
  return promptly::parallel_exclusive_scan(cancellation_token{}, std::forward<First>(first), std::forward<Args>(args)...);
}

template <class First, class... Args>
  requires(!std::same_as<std::remove_cvref_t<First>, cancellation_token>) &&
          requires(First&& f, Args&&... a) {
            promptly::parallel_transform_inclusive_scan(cancellation_token{}, std::forward<First>(f), std::forward<Args>(a)...);
          }
auto parallel_transform_inclusive_scan(First&& first, Args&&... args) {
  return promptly::parallel_transform_inclusive_scan(cancellation_token{}, std::forward<First>(first), std::forward<Args>(args)...);
}

template <class First, class... Args>
  requires(!std::same_as<std::remove_cvref_t<First>, cancellation_token>) &&
          requires(First&& f, Args&&... a) {
            promptly::parallel_transform_exclusive_scan(cancellation_token{}, std::forward<First>(f), std::forward<Args>(a)...);
          }
auto parallel_transform_exclusive_scan(First&& first, Args&&... args) {
  return promptly::parallel_transform_exclusive_scan(cancellation_token{}, std::forward<First>(first), std::forward<Args>(args)...);
}

}  // namespace promptly
