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
// The algorithm is Blelloch's reduce-then-scan ("Prefix Sums and Their Applications", 1990,
// Sec. 1.2, with blocks as leaves) made adaptive as oneTBB's parallel_scan is (its pre-scan
// runs only on ranges that were stolen): the input is cut into at most scan_max_blocks blocks
// of at least scan_min_block elements, and the blocks are processed in parallel, each worker
// going left to right through a contiguous run of them. A block whose left neighbour has
// already published its running total is scanned from it at once, in one pass; on one worker
// that is every block, so the scan reads its input once and writes its output once, as a
// sequential loop does. A block whose neighbour is not done yet (a thief's run, ahead of the
// running total) only reduces itself; a sequential pass over the per-block sums then gives
// each such block its prefix, and a second parallel pass scans those blocks. About n to 2n
// applications of op (n on one worker), span O(n / blocks + blocks). unary may be called twice
// per element, so it must be a pure function of its argument.
//
// Each also takes a cancellation token (a std::stop_token) as its first argument
// (cancellation.hpp). Exceptions and cancellation: the first exception (in time) from op, unary
// or a copy stops the blocks not yet started and propagates after every started block
// finished; a stop request that skipped blocks throws promptly::cancelled. out then holds an
// unspecified mix of old and new values.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
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

// out[k] = prefix op x0 op ... op xk over a non-empty [b, e) (prefix null: x0 op ... op xk);
// returns the last value written. Each input is read before its output is written, so out may
// equal b.
template <class T, class In, class Out, class Op, class Unary>
T inclusive_block(In b, In e, Out o, const T* prefix, Op& op, Unary& unary) {
  T acc = prefix ? T(std::invoke(op, *prefix, std::invoke(unary, *b))) : T(std::invoke(unary, *b));
  *o = acc;
  for (++b, ++o; b != e; ++b, ++o) {
    acc = std::invoke(op, std::move(acc), std::invoke(unary, *b));
    *o = acc;
  }
  return acc;
}

// out[k] = prefix op x0 op ... op x(k-1) over [b, e); returns prefix op x0 op ... op x(n-1).
template <class T, class In, class Out, class Op, class Unary>
T exclusive_block(In b, In e, Out o, const T& prefix, Op& op, Unary& unary) {
  T acc = prefix;
  for (; b != e; ++b, ++o) {
    T next(std::invoke(op, std::as_const(acc), std::invoke(unary, *b)));
    *o = std::move(acc);
    acc = std::move(next);
  }
  return acc;
}

// x0 op ... op x(n-1) over a non-empty [b, e).
template <class T, class In, class Op, class Unary>
T fold_block(In b, In e, Op& op, Unary& unary) {
  T acc(std::invoke(unary, *b));
  for (++b; b != e; ++b) acc = std::invoke(op, std::move(acc), std::invoke(unary, *b));
  return acc;
}

// What the first pass left of one block. Invariants: `state` goes from pending to scanned or
// reduced once, with a release store after `total` is written, and a block is scanned in the
// first pass only after an acquire load saw its left neighbour scanned (so the running total it
// starts from is complete and visible); `total` is then init op x0 op ... op (the block's last
// element) for a scanned block, and the block's own reduction for a reduced one (the last
// block, which no block starts from, is not reduced: it is left pending for the second pass).
template <class T>
struct scan_block_state {
  enum : unsigned char { pending, scanned, reduced };
  std::atomic<unsigned char> state{pending};
  std::optional<T> total;
};

// The scans: `init` is the exclusive scan's start, or the inclusive scan's optional one.
template <class T, bool Inclusive, class In, class Out, class Op, class Unary>
Out scan(cancellation_token stop, In first, In last, Out out, std::optional<T> init, Op& op, Unary& unary) {
  const auto n = static_cast<std::size_t>(last - first);
  const std::size_t block = std::max(scan_min_block, (n + scan_max_blocks - 1) / scan_max_blocks);
  const std::size_t blocks = (n + block - 1) / block;
  using D = std::iter_difference_t<In>;
  using E = std::iter_difference_t<Out>;
  const In block_begin = first;
  auto bounds = [&](std::size_t j) {
    return std::pair{block_begin + static_cast<D>(j * block), block_begin + static_cast<D>(std::min(n, (j + 1) * block))};
  };
  // Scans block j from prefix (null: the inclusive scan's first block without init) and
  // returns the running total after it.
  auto scan_block = [&](std::size_t j, const T* prefix) -> T {
    const auto [b, e] = bounds(j);
    const Out o = out + static_cast<E>(j * block);
    if constexpr (Inclusive)
      return inclusive_block(b, e, o, prefix, op, unary);
    else
      return exclusive_block(b, e, o, *prefix, op, unary);
  };
  const char* what = Inclusive ? "parallel_inclusive_scan" : "parallel_exclusive_scan";
  cancel_scope scope(std::move(stop));
  if (blocks <= 1) {  // one block: sequential, on the caller
    if (n > 0) scope.run([&] { scan_block(0, init ? &*init : nullptr); });
    scope.finish(what);
    return out + static_cast<E>(n);
  }
  run_data_parallel([&] {  // outside a runtime: on the default runtime
    std::unique_ptr<scan_block_state<T>[]> st(new scan_block_state<T>[blocks]);
    // Pass 1: every block, each worker's run left to right.
    auto first_pass = [&](std::size_t lo, std::size_t hi) {
      for (std::size_t j = lo; j != hi; ++j) {
        if (j == 0 || st[j - 1].state.load(std::memory_order_acquire) == scan_block_state<T>::scanned) {
          st[j].total.emplace(scan_block(j, j > 0 ? &*st[j - 1].total : init ? &*init : nullptr));
          st[j].state.store(scan_block_state<T>::scanned, std::memory_order_release);
        } else if (j + 1 < blocks) {
          const auto [b, e] = bounds(j);
          st[j].total.emplace(fold_block<T>(b, e, op, unary));
          st[j].state.store(scan_block_state<T>::reduced, std::memory_order_release);
        }
      }
    };
    split_range(std::size_t{0}, blocks, 1, first_pass, scope);
    // The blocks left for pass 2 and, sequentially over the block totals, the running total each
    // one starts from (its left neighbour's total, made a running total here).
    std::vector<std::size_t> left;
    scope.run([&] {
      for (std::size_t j = 1; j < blocks; ++j) {
        const auto s = st[j].state.load(std::memory_order_relaxed);
        if (s == scan_block_state<T>::scanned) continue;
        assert(st[j - 1].state.load(std::memory_order_relaxed) != scan_block_state<T>::pending);
        left.push_back(j);
        if (s == scan_block_state<T>::reduced)
          st[j].total.emplace(std::invoke(op, std::as_const(*st[j - 1].total), std::move(*st[j].total)));
      }
    });
    if (left.empty()) return;
    auto second_pass = [&](std::size_t lo, std::size_t hi) {
      for (std::size_t k = lo; k != hi; ++k) scan_block(left[k], &*st[left[k] - 1].total);
    };
    split_range(std::size_t{0}, left.size(), 1, second_pass, scope);
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
  return detail::scan<T, true>(std::move(stop), first, last, out, std::nullopt, op, unary);
}

template <std::random_access_iterator In, std::random_access_iterator Out, class Op, class Unary, class T>
Out parallel_transform_inclusive_scan(cancellation_token stop, In first, In last, Out out, Op op, Unary unary, T init) {
  return detail::scan<T, true>(std::move(stop), first, last, out, std::optional<T>(std::move(init)), op, unary);
}

template <std::random_access_iterator In, std::random_access_iterator Out, class T, class Op, class Unary>
Out parallel_transform_exclusive_scan(cancellation_token stop, In first, In last, Out out, T init, Op op, Unary unary) {
  return detail::scan<T, false>(std::move(stop), first, last, out, std::optional<T>(std::move(init)), op, unary);
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
