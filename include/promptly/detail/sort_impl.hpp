// The sorting algorithms behind promptly/sort.hpp.
//
// Unstable: a pattern-defeating quicksort (detail/pdq_sort.hpp) whose partitions of pieces
// above sort_leaf elements fork both sides with join() (the structure of oneTBB's
// parallel_sort), after an O(n) check for sorted or descending input. Integers in their standard
// order that a sample shows to take few values are counted instead (detail/few_values_sort.hpp);
// strings in their standard order are sorted by cached key prefixes (detail/key_prefix_sort.hpp),
// stably or not.
//
// Stable: parallel merge sort over a buffer of n elements, the two arrays swapping roles at each
// level (ping-pong), with a parallel merge that splits the longer input at its middle and the
// other at the matching binary-search point (the divide-and-conquer merge of Cormen et al.,
// "Introduction to Algorithms", 3rd ed., Sec. 27.3); pieces of at most sort_leaf elements go to
// std::ranges::stable_sort.
//
// Invariants
//  * Elements move only by swaps, moves through one held element that is written back (the
//    quicksort's pivot, cyclic moves and insertion sorts, detail/pdq_sort.hpp), or whole-level
//    moves (merge sort), so when every comparison returns, the range holds a permutation of its
//    input.
//  * A comparison that may throw, or of a sort that may be cancelled, runs inside guarded_less:
//    the first exception is kept in the cancel_scope (cancellation.hpp), and once the scope is
//    stopped (that exception, or a stop request) every comparison, in every piece, returns
//    false without calling the user. A comparator that answers false for everything is consistent from then
//    on (all elements equivalent), every loop of the algorithms advances only while it answers
//    true or is bounded by the range, so the remaining pieces finish quickly and in bounds,
//    and the range stays a permutation; the caller rethrows (or throws cancelled) once every
//    piece has finished. Quicksort pieces that find the scope stopped are skipped (a piece
//    only swaps inside its range); merge-sort pieces never are (a skipped level would leave
//    elements behind in the buffer), the false answers make them quick instead.
//  * A partition returns a place inside its range and a parallel merge cuts both of its halves
//    smaller (asserted in Debug builds), so the recursion ends.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <exception>
#include <concepts>
#include <functional>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

#include "promptly/cancellation.hpp"
#include "promptly/fork_join.hpp"
#include "promptly/detail/few_values_sort.hpp"
#include "promptly/detail/key_prefix_sort.hpp"
#include "promptly/detail/pdq_sort.hpp"
#include "promptly/detail/sort_buffer.hpp"
#include "promptly/detail/sort_compare.hpp"
#include "promptly/parallel.hpp"

namespace promptly::detail {

// Merges of at most this many elements run sequentially.
inline constexpr std::ptrdiff_t merge_leaf = 8192;

// ---- unstable: pattern-defeating quicksort (detail/pdq_sort.hpp) ----

// Integers with few distinct values are counted (detail/few_values_sort.hpp), strings in their
// standard order go by key prefixes (detail/key_prefix_sort.hpp), unless that path declines.
template <class Comp, class Proj, class I, class Less>
void sort_unstable(I first, I last, Less less, cancel_scope& scope) {
  if (parallel_presorted(first, last, less)) return;
  if constexpr (constexpr int dir = few_values_direction<I, Comp, Proj>; dir != 0)
    if (few_values_sort<dir>(first, last, scope)) return;
  if constexpr (constexpr int dir = key_prefix_direction<I, Comp, Proj>; dir != 0)
    if (key_prefix_sort<dir, false>(first, last, scope)) return;
  parallel_pdq_sort_unchecked(first, last, less, scope);
}

// ---- stable: parallel merge sort ----

// Whether a stable sort's result is the same as an unstable one's, so that parallel_stable_sort
// may run the in-place quicksort: integers ordered by their own value (no projection, the
// standard less or greater). Two such elements compare equal only when they are the same value
// with the same bits, so no order among equals can be told apart. Not floating point (-0.0 and
// +0.0 compare equal but differ) and not a user comparator (it may compare by a key).
template <class I, class Comp, class Proj>
inline constexpr bool stability_unobservable = std::integral<std::iter_value_t<I>> && standard_order<I, Comp, Proj> != 0;

// Moves the merge of sorted [a, a + na) and [b, b + nb) (a's elements first among equals)
// to out.
template <class X, class Y, class Less>
void parallel_merge(X a, std::ptrdiff_t na, X b, std::ptrdiff_t nb, Y out, Less& less) {
  if (na + nb <= merge_leaf) {
    std::ranges::merge(std::make_move_iterator(a), std::make_move_iterator(a + na), std::make_move_iterator(b),
                       std::make_move_iterator(b + nb), out, less);
    return;
  }
  // Split the longer input at its middle (both halves shrink, since it holds >= 2 elements):
  // elements of a before everything equal in b, as a sequential merge orders them.
  std::ptrdiff_t ma;
  std::ptrdiff_t mb;
  if (na >= nb) {
    ma = na / 2;
    mb = std::ranges::lower_bound(b, b + nb, a[ma], less) - b;
  } else {
    mb = nb / 2;
    ma = std::ranges::upper_bound(a, a + na, b[mb], less) - a;
  }
  assert(0 <= ma && ma <= na && 0 <= mb && mb <= nb && ma + mb > 0 && ma + mb < na + nb);  // both halves shrink
  join([&] { parallel_merge(a, ma, b, mb, out, less); },
       [&] { parallel_merge(a + ma, na - ma, b + mb, nb - mb, out + (ma + mb), less); });
}

// Sorts the n elements at src; they end at dst if into_dst, else at src.
template <class X, class Y, class Less>
void merge_sort(X src, Y dst, std::ptrdiff_t n, bool into_dst, Less& less) {
  if (n <= sort_leaf) {
    std::ranges::stable_sort(src, src + n, less);
    if (into_dst) std::ranges::move(src, src + n, dst);
    return;
  }
  const std::ptrdiff_t h = n / 2;
  join([&] { merge_sort(src, dst, h, !into_dst, less); }, [&] { merge_sort(src + h, dst + h, n - h, !into_dst, less); });
  if (into_dst)
    parallel_merge(src, h, src + h, n - h, dst, less);  // the halves are at src
  else
    parallel_merge(dst, h, dst + h, n - h, src, less);  // the halves are at dst
}

template <class I, class Less>
void parallel_merge_sort(I first, I last, Less less) {
  using T = std::iter_value_t<I>;
  const std::ptrdiff_t n = last - first;
  if (n <= sort_leaf) {
    std::ranges::stable_sort(first, last, less);
    return;
  }
  if constexpr (!std::is_nothrow_move_constructible_v<T> || !std::is_nothrow_move_assignable_v<T>) {
    // A move that throws halfway through a level would lose elements: sort sequentially,
    // with std::ranges::stable_sort's guarantees.
    std::ranges::stable_sort(first, last, less);
  } else {
    sort_buffer<T> buf(static_cast<std::size_t>(n));  // may throw before any element moved
    if constexpr (std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>) {
      // The allocation created the objects (implicit-lifetime types): sort in place, the
      // buffer as scratch.
      merge_sort(first, buf.data(), n, false, less);
    } else {
      // Move every element into the buffer (in parallel: it is a memory pass), then sort from
      // there back into the range.
      T* b = buf.data();
      auto move_piece = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) { std::uninitialized_move(first + lo, first + hi, b + lo); };
      cancel_scope every_piece;  // never stopped: no element may stay behind in the buffer
      split_range(std::ptrdiff_t{0}, n, static_cast<std::size_t>(merge_leaf), move_piece, every_piece);
      buf.mark_constructed();
      merge_sort(b, first, n, true, less);
    }
  }
}

// Integers in their standard order go to the unstable sort (equal ones are indistinguishable),
// strings in their standard order by key prefixes with ties broken by position
// (detail/key_prefix_sort.hpp) unless that path declines, the rest to the merge sort.
template <class Comp, class Proj, class I, class Less>
void sort_stable(I first, I last, Less less, cancel_scope& scope) {
  if constexpr (stability_unobservable<I, Comp, Proj>) {
    sort_unstable<Comp, Proj>(first, last, less, scope);
  } else {
    if constexpr (constexpr int dir = key_prefix_direction<I, Comp, Proj>; dir != 0)
      if (key_prefix_sort<dir, true>(first, last, scope)) return;
    parallel_merge_sort(first, last, less);
  }
}

}  // namespace promptly::detail
