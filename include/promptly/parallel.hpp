// Parallel loops over an index range, built on join():
//
//   parallel_for(first, last, grain, body)        body(i) for every i in [first, last)
//   parallel_for(index_range{first, last}, grain, body)
//                                                 body(sub) for disjoint sub-ranges covering it
//   parallel_for(index_box{rows, cols[, depth]}, grain, body)
//                                                 body(tile) for disjoint tiles covering the box
//   parallel_reduce(first, last, grain, identity, map, combine)
//                                                 combine over i of map(i), identity if empty
//
// Every form halves the range with join() until a piece holds at most `grain` indices (grain 0
// means 1), so a piece holds between grain/2 and grain indices and the split tree has
// about 2 * size / grain nodes: the cost model of Cilk's cilk_for, where the caller chooses
// grain so that one piece's work dwarfs a spawn (tens of nanoseconds here, bench/results/core).
//
// Without a grain (parallel_for(first, last, body), parallel_for(index_range, body),
// parallel_for(index_box, body), parallel_reduce(first, last, identity, map, combine)) the
// split is adaptive, as Rayon's (rayon-core's Splitter, "iter/plumbing/README.md") and
// oneTBB's auto_partitioner: a range is cut into about 8 pieces per worker (a split budget of
// 4 * workers, halved at each level), and a piece that was stolen (it runs on another worker
// than the one that split it) gets a new budget of `workers` splits, so work spreads further
// only where idle workers took it. A 1D piece the budget no longer divides runs in chunks of a
// sixteenth of it and offers half of its rest to idle workers (lazy binary splitting, below).
// A piece is never cut below one index.
//
// A box (2D, 3D) is halved across its longest dimension until a tile holds at most `grain`
// indices in all, so tiles stay close to square (cubic), which keeps a stencil's reads of
// neighbouring rows in cache, as oneTBB's blocked_range2d does.
//
// Bounds may have different integral types (0 and v.size()): they meet in their common type,
// which is the index type passed to the body; a bound it cannot represent throws
// std::out_of_range (index_range.hpp). last <= first is an empty loop.
//
// Outside any runtime's worker, each call runs on the default runtime (default_runtime.hpp),
// or sequentially on the caller in a sequential_region.
//
// Cancellation and exceptions (cancellation.hpp): every form also takes a cancellation token
// (a std::stop_token) as its first argument. Each piece (of a grain-less 1D loop, each chunk)
// checks the token, and whether another piece threw, before it starts: once either happened,
// pieces not yet started are skipped; pieces that started finish. Then the first exception
// thrown (in time) propagates, the others are discarded; with no exception, a call that skipped
// pieces because of a stop request throws promptly::cancelled. A stop request that comes after
// every piece started changes nothing.
//
// parallel_reduce: `combine` must be associative and `identity` its neutral element; neither
// needs to be commutative, since pieces are combined in index order: the result is
// combine(...combine(combine(identity, map(first)), map(first + 1))..., map(last - 1))
// up to re-association. Each piece starts from a copy of `identity`.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include <optional>

#include "promptly/cancellation.hpp"
#include "promptly/default_runtime.hpp"
#include "promptly/fork_join.hpp"
#include "promptly/index_range.hpp"
#include "promptly/nothing.hpp"

namespace promptly {

namespace detail {

// The number of workers of the runtime the caller runs on; 1 outside any runtime
// (src/runtime/runtime.cpp).
unsigned current_runtime_workers() noexcept;

// Rayon's Splitter::try_split: a piece splits while its budget lasts, and a stolen piece gets
// a fresh budget of `workers` splits.
struct adaptive_splitter {
  std::size_t splits;
  std::size_t workers;
  static adaptive_splitter initial() noexcept {
    const std::size_t p = current_runtime_workers();
    return {4 * p, p};
  }
  bool try_split(bool stolen) noexcept {
    if (stolen) {
      splits = std::max(workers, splits / 2);
      return true;
    }
    if (splits == 0) return false;
    splits /= 2;
    return true;
  }
};

// join(f(false), g(stolen)): g learns whether a thief ran it.
template <class F, class G>
auto join_noting_steals(F&& f, G&& g) {
  worker_view* const splitter = current_worker();
  return join([&] { return f(false); }, [&] { return g(current_worker() != splitter); });
}

// Calls leaf(first, last) on pieces of at most `grain` indices, in parallel. A piece that
// finds the scope stopped (a stop request, or an exception in another piece) is skipped.
template <loop_index I, class Leaf>
void split_range(I first, I last, std::size_t grain, Leaf& leaf, cancel_scope& scope) {
  const auto n = index_distance(first, last);
  if (static_cast<std::uintmax_t>(n) <= grain) {
    scope.run([&] { leaf(first, last); });
    return;
  }
  if (!scope.enter()) return;
  const I mid = index_advance(first, static_cast<decltype(n)>(n / 2));
  join([&] { split_range(first, mid, grain, leaf, scope); }, [&] { split_range(mid, last, grain, leaf, scope); });
}

// combine(a, b), unless the scope is stopped (the result is then discarded) or combine throws.
template <class T, class Combine>
T combine_unless_stopped(T a, T b, Combine& combine, cancel_scope& scope) {
  if (scope.stopped()) return a;
  try {
    return std::invoke(combine, std::move(a), std::move(b));
  } catch (...) {
    scope.record(std::current_exception());
    return T(std::move(b));
  }
}

// Folds map(i) of [first, last) into acc, unless the scope is stopped.
template <class T, loop_index I, class Map, class Combine>
void fold_into(T& acc, I first, I last, Map& map, Combine& combine, cancel_scope& scope) {
  scope.run([&] {
    for (I i = first; i != last; ++i) acc = std::invoke(combine, std::move(acc), std::invoke(map, i));
  });
}

// A piece of a reduction: the fold of [first, last) from a copy of identity; identity itself
// when the piece is skipped or throws (the scope then holds the outcome).
template <class T, loop_index I, class Map, class Combine>
T reduce_leaf(I first, I last, const T& identity, Map& map, Combine& combine, cancel_scope& scope) {
  T acc = identity;
  fold_into(acc, first, last, map, combine, scope);
  return acc;
}

template <class T, loop_index I, class Map, class Combine>
T reduce_range(I first, I last, std::size_t grain, const T& identity, Map& map, Combine& combine, cancel_scope& scope) {
  const auto n = index_distance(first, last);
  if (static_cast<std::uintmax_t>(n) <= grain || !scope.enter()) return reduce_leaf(first, last, identity, map, combine, scope);
  const I mid = index_advance(first, static_cast<decltype(n)>(n / 2));
  auto [a, b] = join([&] { return reduce_range(first, mid, grain, identity, map, combine, scope); },
                     [&] { return reduce_range(mid, last, grain, identity, map, combine, scope); });
  return combine_unless_stopped(std::move(a), std::move(b), combine, scope);
}

template <loop_index I, std::size_t N, class Body>
void split_box(const index_box<I, N>& box, std::size_t grain, Body& body, cancel_scope& scope) {
  if (box.size() <= grain) {
    scope.run([&] { std::invoke(body, box); });
    return;
  }
  if (!scope.enter()) return;
  // size() > grain >= 1, so some extent is >= 2 and the longest one halves into two non-empty
  // boxes.
  const auto parts = box.halves(box.longest());
  join([&] { split_box(parts.first, grain, body, scope); }, [&] { split_box(parts.second, grain, body, scope); });
}

// Lazy binary splitting (Tzannes, Caragea, Barua and Vishkin, "Lazy Binary Splitting",
// PPoPP 2010), for the pieces the budget no longer divides: such a piece runs in chunks of a
// sixteenth of its length, and before each chunk, when the worker's deque is empty (nothing of
// this worker's is there for an idle one to take), the rest is halved and its second half
// offered like any join branch. While every worker has work the deques are rarely empty and a
// piece runs whole but for a check per chunk; when one runs dry, the others have work to give
// at once, a chunk from the end, instead of finishing pieces of up to 1/16 of the range alone
// (bench/results/algorithms/lazy-split/). A half a thief took starts over with a fresh budget.
inline bool nothing_to_steal_here() noexcept {
  // Reloaded: the piece's body may have parked, and this fiber resumed on another worker.
  const worker_view* w = reload_current_worker();
  return w != nullptr && w->deque != nullptr && w->deque->empty();
}

template <loop_index I>
std::size_t lazy_chunk(I first, I last) noexcept {
  return (static_cast<std::size_t>(index_distance(first, last)) + 15) / 16;  // >= 1: called on 2 or more indices
}

// The loop of a piece split lazily, for the 1D loops (T = nothing) and the reductions alike:
// fold(acc, a, b) adds the chunk [a, b) to acc (through the scope, which skips it once stopped
// and notes the skip); fresh(a, b) runs a half a thief took, with a fresh budget; combine joins
// the results of two adjacent halves in index order. The left half goes on from acc, the
// right one starts from identity.
template <class T, loop_index I, class Fold, class Fresh, class Combine>
T run_piece_lazily(I first, I last, std::size_t chunk, T acc, const T& identity, Fold& fold, Fresh& fresh,
                   Combine& combine, cancel_scope& scope) {
  using distance = decltype(index_distance(first, last));
  for (;;) {
    const auto n = static_cast<std::size_t>(index_distance(first, last));
    if (n <= chunk) {
      fold(acc, first, last);
      return acc;
    }
    if (n >= 2 * chunk && nothing_to_steal_here()) {
      if (!scope.enter()) return acc;
      const I mid = index_advance(first, static_cast<distance>(n / 2));
      auto [left, right] = join_noting_steals(
          [&](bool) {
            return run_piece_lazily(first, mid, chunk, std::move(acc), identity, fold, fresh, combine, scope);
          },
          [&](bool stolen) {
            if (stolen) return fresh(mid, last);
            return run_piece_lazily(mid, last, chunk, identity, identity, fold, fresh, combine, scope);
          });
      return combine_unless_stopped(std::move(left), std::move(right), combine, scope);
    }
    const I next = index_advance(first, static_cast<distance>(chunk));
    fold(acc, first, next);
    first = next;
  }
}

template <loop_index I, class Leaf>
void split_range_adaptive(I first, I last, adaptive_splitter s, bool stolen, Leaf& leaf, cancel_scope& scope) {
  const auto n = index_distance(first, last);
  if (n < 2) {
    scope.run([&] { leaf(first, last); });
    return;
  }
  if (!s.try_split(stolen)) {
    auto fold = [&](nothing&, I a, I b) { scope.run([&] { leaf(a, b); }); };
    auto fresh = [&](I a, I b) {
      split_range_adaptive(a, b, adaptive_splitter{s.workers, s.workers}, true, leaf, scope);
      return nothing{};
    };
    auto neither = [](nothing, nothing) { return nothing{}; };
    (void)run_piece_lazily(first, last, lazy_chunk(first, last), nothing{}, nothing{}, fold, fresh, neither, scope);
    return;
  }
  if (!scope.enter()) return;
  const I mid = index_advance(first, static_cast<decltype(n)>(n / 2));
  join_noting_steals([&](bool st) { split_range_adaptive(first, mid, s, st, leaf, scope); },
                     [&](bool st) { split_range_adaptive(mid, last, s, st, leaf, scope); });
}

template <class T, loop_index I, class Map, class Combine>
T reduce_range_adaptive(I first, I last, adaptive_splitter s, bool stolen, const T& identity, Map& map,
                        Combine& combine, cancel_scope& scope) {
  const auto n = index_distance(first, last);
  if (n < 2) return reduce_leaf(first, last, identity, map, combine, scope);
  if (!s.try_split(stolen)) {
    auto fold = [&](T& acc, I a, I b) { fold_into(acc, a, b, map, combine, scope); };
    auto fresh = [&](I a, I b) {
      return reduce_range_adaptive(a, b, adaptive_splitter{s.workers, s.workers}, true, identity, map, combine, scope);
    };
    return run_piece_lazily(first, last, lazy_chunk(first, last), identity, identity, fold, fresh, combine, scope);
  }
  if (!scope.enter()) return reduce_leaf(first, last, identity, map, combine, scope);
  const I mid = index_advance(first, static_cast<decltype(n)>(n / 2));
  auto [a, b] = join_noting_steals(
      [&](bool st) { return reduce_range_adaptive(first, mid, s, st, identity, map, combine, scope); },
      [&](bool st) { return reduce_range_adaptive(mid, last, s, st, identity, map, combine, scope); });
  return combine_unless_stopped(std::move(a), std::move(b), combine, scope);
}

template <loop_index I, std::size_t N, class Body>
void split_box_adaptive(const index_box<I, N>& box, adaptive_splitter s, bool stolen, Body& body, cancel_scope& scope) {
  if (box.size() < 2 || !s.try_split(stolen)) {
    scope.run([&] { std::invoke(body, box); });
    return;
  }
  if (!scope.enter()) return;
  const auto parts = box.halves(box.longest());
  join_noting_steals([&](bool st) { split_box_adaptive(parts.first, s, st, body, scope); },
                     [&](bool st) { split_box_adaptive(parts.second, s, st, body, scope); });
}

// The range-form body of the index forms: body(i) for each i of a piece, in order.
template <class I, class Body>
auto each_index_of(Body& body) {
  return [&body](index_range<I> piece) {
    for (I i = piece.first(); i != piece.last(); ++i) std::invoke(body, i);
  };
}

// Runs run(scope) as a data-parallel call (run_data_parallel) whose pieces share one scope with
// the caller's token, then rethrows the first exception or reports skipped pieces
// (cancellation.hpp).
template <class Run>
void run_pieces(cancellation_token stop, const char* what, Run&& run) {
  cancel_scope scope(std::move(stop));
  run_data_parallel([&] { run(scope); });
  scope.finish(what);
}

}  // namespace detail

// The multidimensional form: body(index_box<I, N>) on disjoint tiles of at most `grain` indices
// in all whose union is the box.
template <loop_index I, std::size_t N, class Body>
  requires std::invocable<Body&, index_box<I, N>>
void parallel_for(cancellation_token stop, const index_box<I, N>& box, std::size_t grain, Body&& body) {
  if (box.empty()) return;
  detail::run_pieces(std::move(stop), "parallel_for",
                     [&](detail::cancel_scope& sc) { detail::split_box(box, grain == 0 ? 1 : grain, body, sc); });
}

// The range form: body(index_range<I>) on disjoint sub-ranges of at most `grain` indices whose
// union is r. The body runs its own loop, which the compiler can vectorize.
template <loop_index I, class Body>
  requires std::invocable<Body&, index_range<I>>
void parallel_for(cancellation_token stop, index_range<I> r, std::size_t grain, Body&& body) {
  if (r.empty()) return;
  auto leaf = [&body](I first, I last) { std::invoke(body, index_range<I>(first, last)); };
  detail::run_pieces(std::move(stop), "parallel_for", [&](detail::cancel_scope& sc) {
    detail::split_range(r.first(), r.last(), grain == 0 ? 1 : grain, leaf, sc);
  });
}

// body(i) for every i in [first, last), i of the bounds' common type: the range form with a
// loop over each piece.
template <loop_index A, loop_index B, class Body>
  requires std::invocable<Body&, detail::common_index_t<A, B>>
void parallel_for(cancellation_token stop, A first, B last, std::size_t grain, Body&& body) {
  using I = detail::common_index_t<A, B>;
  const index_range<I> r(detail::to_index<I>(first, "first"), detail::to_index<I>(last, "last"));
  parallel_for(std::move(stop), r, grain, detail::each_index_of<I>(body));
}

// The combination, in index order, of map(i) for i in [first, last), each piece starting from
// `identity`; identity itself when the range is empty. T is identity's type: map's results
// and combine's must convert to it.
template <loop_index A, loop_index B, class T, class Map, class Combine>
  requires std::invocable<Map&, detail::common_index_t<A, B>> &&
           std::convertible_to<std::invoke_result_t<Map&, detail::common_index_t<A, B>>, std::decay_t<T>> &&
           std::invocable<Combine&, std::decay_t<T>, std::decay_t<T>> &&
           std::convertible_to<std::invoke_result_t<Combine&, std::decay_t<T>, std::decay_t<T>>, std::decay_t<T>> &&
           std::copy_constructible<std::decay_t<T>>
[[nodiscard]] std::decay_t<T> parallel_reduce(cancellation_token stop, A first, B last, std::size_t grain, T&& identity,
                                              Map&& map, Combine&& combine) {
  using I = detail::common_index_t<A, B>;
  using V = std::decay_t<T>;
  const index_range<I> r(detail::to_index<I>(first, "first"), detail::to_index<I>(last, "last"));
  const V init(std::forward<T>(identity));
  if (r.empty()) return init;
  std::optional<V> result;
  detail::run_pieces(std::move(stop), "parallel_reduce", [&](detail::cancel_scope& sc) {
    result.emplace(detail::reduce_range<V>(r.first(), r.last(), grain == 0 ? 1 : grain, init, map, combine, sc));
  });
  return std::move(*result);
}

// ---- adaptive forms (no grain; see the top of this file) ----

template <loop_index I, class Body>
  requires std::invocable<Body&, index_range<I>>
void parallel_for(cancellation_token stop, index_range<I> r, Body&& body) {
  if (r.empty()) return;
  auto leaf = [&body](I first, I last) { std::invoke(body, index_range<I>(first, last)); };
  detail::run_pieces(std::move(stop), "parallel_for", [&](detail::cancel_scope& sc) {
    detail::split_range_adaptive(r.first(), r.last(), detail::adaptive_splitter::initial(), false, leaf, sc);
  });
}

template <loop_index A, loop_index B, class Body>
  requires std::invocable<Body&, detail::common_index_t<A, B>>
void parallel_for(cancellation_token stop, A first, B last, Body&& body) {
  using I = detail::common_index_t<A, B>;
  const index_range<I> r(detail::to_index<I>(first, "first"), detail::to_index<I>(last, "last"));
  parallel_for(std::move(stop), r, detail::each_index_of<I>(body));
}

template <loop_index I, std::size_t N, class Body>
  requires std::invocable<Body&, index_box<I, N>>
void parallel_for(cancellation_token stop, const index_box<I, N>& box, Body&& body) {
  if (box.empty()) return;
  detail::run_pieces(std::move(stop), "parallel_for", [&](detail::cancel_scope& sc) {
    detail::split_box_adaptive(box, detail::adaptive_splitter::initial(), false, body, sc);
  });
}

template <loop_index A, loop_index B, class T, class Map, class Combine>
  requires std::invocable<Map&, detail::common_index_t<A, B>> &&
           std::convertible_to<std::invoke_result_t<Map&, detail::common_index_t<A, B>>, std::decay_t<T>> &&
           std::invocable<Combine&, std::decay_t<T>, std::decay_t<T>> &&
           std::convertible_to<std::invoke_result_t<Combine&, std::decay_t<T>, std::decay_t<T>>, std::decay_t<T>> &&
           std::copy_constructible<std::decay_t<T>>
[[nodiscard]] std::decay_t<T> parallel_reduce(cancellation_token stop, A first, B last, T&& identity, Map&& map,
                                              Combine&& combine) {
  using I = detail::common_index_t<A, B>;
  using V = std::decay_t<T>;
  const index_range<I> r(detail::to_index<I>(first, "first"), detail::to_index<I>(last, "last"));
  const V init(std::forward<T>(identity));
  if (r.empty()) return init;
  std::optional<V> result;
  detail::run_pieces(std::move(stop), "parallel_reduce", [&](detail::cancel_scope& sc) {
    result.emplace(detail::reduce_range_adaptive<V>(r.first(), r.last(), detail::adaptive_splitter::initial(), false,
                                                    init, map, combine, sc));
  });
  return std::move(*result);
}

// ---- the same without a token ----

template <class First, class... Args>
  requires(!std::same_as<std::remove_cvref_t<First>, cancellation_token>) &&
          requires(First&& f, Args&&... a) {
            promptly::parallel_for(cancellation_token{}, std::forward<First>(f), std::forward<Args>(a)...);
          }
void parallel_for(First&& first, Args&&... args) {
  promptly::parallel_for(cancellation_token{}, std::forward<First>(first), std::forward<Args>(args)...);
}

template <class First, class... Args>
  requires(!std::same_as<std::remove_cvref_t<First>, cancellation_token>) &&
          requires(First&& f, Args&&... a) {
            promptly::parallel_reduce(cancellation_token{}, std::forward<First>(f), std::forward<Args>(a)...);
          }
[[nodiscard]] auto parallel_reduce(First&& first, Args&&... args) {
  return promptly::parallel_reduce(cancellation_token{}, std::forward<First>(first), std::forward<Args>(args)...);
}

}  // namespace promptly
