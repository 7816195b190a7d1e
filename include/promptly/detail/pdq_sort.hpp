// The unstable sort behind parallel_sort: a pattern-defeating quicksort (Orson Peters,
// "Pattern-defeating Quicksort", 2021), run sequentially on a piece or, with Parallel, with
// join() on the two sides of every partition of a piece larger than sort_leaf.
//
//  * Pivot: median of three, or for more than ninther_threshold elements Tukey's ninther
//    (Bentley and McIlroy, "Engineering a Sort Function", Sec. 5), moved to the front.
//  * Partition: Hoare's, elements equal to the pivot going right. For arithmetic and pointer
//    keys the comparisons run in blocks of block_size, recording misplaced offsets without
//    branching on the answer and swapping them afterwards (Edelkamp and Weiss, "BlockQuicksort:
//    Avoiding Branch Mispredictions in Quicksort", Sec. 3), so a random comparison result costs
//    no misprediction.
//  * Few distinct keys: a pivot equal to the element just left of the range (an earlier pivot,
//    no greater than anything in the range) means the range holds many copies of it; they are
//    split off to the left in one pass and never looked at again (Peters, Sec. 3.2), so k
//    distinct keys cost O(n k) at most.
//  * Presorted input: a partition that swapped nothing tries an insertion sort of both sides
//    that gives up after partial_insertion_limit moves (Peters, Sec. 3.3): sorted runs cost O(n).
//  * Bad partitions (a side under n/8): a few elements are swapped to break the pattern that
//    caused it, and after log2(n) of them the piece goes to heapsort (Musser's introsort bound),
//    so the worst case stays O(n log n).
//
// Invariants (those of detail/sort_impl.hpp, which this file keeps):
//  * The comparison never throws here: a comparator that may throw reaches this file wrapped
//    in guarded_less, which answers false once the scope is stopped. Elements move by swaps and
//    by moves through one held element that is always written back (the pivot, the element an
//    insertion sifts), and moves must not throw (sort.hpp), so the range stays a permutation.
//  * Every loop that advances while the comparison answers false is bounded by the range; loops
//    that advance while it answers true rely on a sentinel (an element known not to compare
//    true), which the switch of a guarded comparison to "always false" only makes stop sooner.
//    So a comparator stopped midway leaves every loop in bounds.
//  * Pieces run in parallel only touch their own range; they read the element just left of it
//    (the partition's pivot, which no piece writes).
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>

#include "promptly/cancellation.hpp"
#include "promptly/fork_join.hpp"

namespace promptly::detail {

// Pieces of at most this many elements are sorted sequentially: ~20 us of work for 4-byte keys,
// which dwarfs a join (tens of ns, bench/results/core).
inline constexpr std::ptrdiff_t sort_leaf = 2048;

namespace pdq {

// Below this many elements an insertion sort beats partitioning (Peters' measured cutoff).
inline constexpr std::ptrdiff_t insertion_limit = 24;
inline constexpr std::ptrdiff_t ninther_threshold = 128;
inline constexpr int partial_insertion_limit = 8;
// 64 one-byte offsets per side: two cache lines of offsets, blocks of a few cache lines of keys.
inline constexpr std::ptrdiff_t block_size = 64;

// Whether comparisons are cheap enough for the block partition to pay off.
template <class I>
inline constexpr bool block_partition =
    std::is_arithmetic_v<std::iter_value_t<I>> || std::is_pointer_v<std::iter_value_t<I>>;

// Insertion sort of [first, last). Unguarded: an element left of first is no greater than any in
// the range and stops the sift.
template <bool Unguarded, class I, class Less>
void insertion_sort(I first, I last, Less& less) {
  if (first == last) return;
  for (I cur = first + 1; cur != last; ++cur) {
    I hole = cur;
    if (!less(*hole, *(hole - 1))) continue;
    std::iter_value_t<I> held = std::ranges::iter_move(hole);
    do {
      *hole = std::ranges::iter_move(hole - 1);
      --hole;
    } while ((Unguarded || hole != first) && less(held, *(hole - 1)));
    *hole = std::move(held);
  }
}

// Insertion sort that gives up (returning false) once it has moved elements more than
// partial_insertion_limit places in total; the range is then a permutation, partly sorted.
template <class I, class Less>
bool partial_insertion_sort(I first, I last, Less& less) {
  if (first == last) return true;
  std::ptrdiff_t moved = 0;
  for (I cur = first + 1; cur != last; ++cur) {
    if (moved > partial_insertion_limit) return false;
    I hole = cur;
    if (!less(*hole, *(hole - 1))) continue;
    std::iter_value_t<I> held = std::ranges::iter_move(hole);
    do {
      *hole = std::ranges::iter_move(hole - 1);
      --hole;
    } while (hole != first && less(held, *(hole - 1)));
    *hole = std::move(held);
    moved += cur - hole;
  }
  return true;
}

template <class I, class Less>
void sort2(I a, I b, Less& less) {
  if (less(*b, *a)) std::ranges::iter_swap(a, b);
}

// Leaves the median of *a, *b, *c at b and the largest at c.
template <class I, class Less>
void sort3(I a, I b, I c, Less& less) {
  sort2(a, b, less);
  sort2(b, c, less);
  sort2(a, b, less);
}

// Moves the pivot to *first. Each triple's largest lands near the end, so some element at or
// after the pivot's rank stays in (first, last): the sentinel of partition_right's first scan.
template <class I, class Less>
void choose_pivot(I first, I last, Less& less) {
  const auto n = last - first;
  const auto h = n / 2;
  if (n > ninther_threshold) {
    sort3(first, first + h, last - 1, less);
    sort3(first + 1, first + (h - 1), last - 2, less);
    sort3(first + 2, first + (h + 1), last - 3, less);
    sort3(first + (h - 1), first + h, first + (h + 1), less);
    std::ranges::iter_swap(first, first + h);
  } else {
    sort3(first + h, first, last - 1, less);
  }
}

// Finishes a partition around pivot: on entry [lo_begin, first) holds elements for which
// goes_left is true, [last, end) elements for which it is false, [first, last) is unknown.
// Returns the boundary. Both scans are bounded by the range.
template <class I, class GoesLeft>
I finish_partition(I first, I last, GoesLeft goes_left, bool& swapped) {
  for (;;) {
    while (first < last && goes_left(*first)) ++first;
    while (first < last && !goes_left(*(last - 1))) --last;
    if (first == last) return first;
    std::ranges::iter_swap(first, last - 1);
    swapped = true;
    ++first;
    --last;
  }
}

// Block partition of the unknown [first, last) (same contract as finish_partition): classifies
// block_size elements from each end into offset buffers without branching on the answers, then
// swaps misplaced pairs; what is left when less than two blocks remain is finished by scans.
template <class I, class GoesLeft>
I block_partition_range(I first, I last, GoesLeft goes_left, bool& swapped) {
  unsigned char misplaced_left[block_size];
  unsigned char misplaced_right[block_size];
  std::ptrdiff_t n_left = 0, n_right = 0, done_left = 0, done_right = 0;
  // Invariant: [.., first) goes left and [last, ..) goes right, except the entries still listed
  // (from done_*) in the buffers, which lie in the block at first, resp. the block before last.
  while (last - first >= 2 * block_size) {
    if (n_left == 0) {
      done_left = 0;
      for (std::ptrdiff_t i = 0; i < block_size; ++i) {
        misplaced_left[n_left] = static_cast<unsigned char>(i);
        n_left += !goes_left(first[i]);
      }
    }
    if (n_right == 0) {
      done_right = 0;
      for (std::ptrdiff_t i = 0; i < block_size; ++i) {
        misplaced_right[n_right] = static_cast<unsigned char>(i);
        n_right += goes_left(*(last - 1 - i));
      }
    }
    const std::ptrdiff_t pairs = std::min(n_left, n_right);
    for (std::ptrdiff_t k = 0; k < pairs; ++k)
      std::ranges::iter_swap(first + misplaced_left[done_left + k], last - 1 - misplaced_right[done_right + k]);
    swapped |= pairs > 0;
    n_left -= pairs;
    n_right -= pairs;
    done_left += pairs;
    done_right += pairs;
    if (n_left == 0) first += block_size;
    if (n_right == 0) last -= block_size;
  }
  // A half-consumed block is unknown again (its listed entries are still misplaced, the rest
  // are right where they are): the scans re-read it, at most block_size comparisons.
  return finish_partition(first, last, goes_left, swapped);
}

struct partition_result {
  std::ptrdiff_t pivot;      // offset of the pivot's final place
  bool already_partitioned;  // nothing was swapped
};

// Partitions [first, last) around *first: [first, p) less than the pivot, (p, last) not less.
template <class I, class Less>
partition_result partition_right(I first, I last, Less& less) {
  std::iter_value_t<I> pivot = std::ranges::iter_move(first);
  auto goes_left = [&](auto&& x) { return less(x, pivot); };
  bool swapped = false;
  I lo = first + 1;
  // Skip the leading run that is already in place (the common case for presorted input); the
  // sentinel is the chosen pivot's neighbour of greater rank (choose_pivot).
  while (lo < last && goes_left(*lo)) ++lo;
  I mid;
  if constexpr (block_partition<I>)
    mid = block_partition_range(lo, last, goes_left, swapped);
  else
    mid = finish_partition(lo, last, goes_left, swapped);
  assert(first < mid && mid <= last);  // the pivot's place is inside the range
  const I p = mid - 1;
  *first = std::ranges::iter_move(p);
  *p = std::move(pivot);
  return {p - first, !swapped};
}

// Partitions [first, last) around *first, elements equal to the pivot going left: [first, p]
// not greater than the pivot, (p, last) greater. Returns p.
template <class I, class Less>
I partition_left(I first, I last, Less& less) {
  std::iter_value_t<I> pivot = std::ranges::iter_move(first);
  bool swapped = false;
  const I mid = finish_partition(first + 1, last, [&](auto&& x) { return !less(pivot, x); }, swapped);
  assert(first < mid && mid <= last);
  const I p = mid - 1;
  *first = std::ranges::iter_move(p);
  *p = std::move(pivot);
  return p;
}

// Swaps a few elements of a side that came out too small, so that the next pivot of a
// patterned input lands elsewhere (Peters, Sec. 3.4).
template <class I>
void break_patterns(I first, I last) {
  const auto n = last - first;
  if (n < insertion_limit) return;
  const auto q = n / 4;
  std::ranges::iter_swap(first, first + q);
  std::ranges::iter_swap(last - 1, last - 1 - q);
  if (n > ninther_threshold) {
    std::ranges::iter_swap(first + 1, first + (q + 1));
    std::ranges::iter_swap(first + 2, first + (q + 2));
    std::ranges::iter_swap(last - 2, last - (q + 2));
    std::ranges::iter_swap(last - 3, last - (q + 3));
  }
}

// floor(log2(n)): the number of bad partitions allowed before heapsort.
inline int log2_floor(std::ptrdiff_t n) noexcept {
  int d = 0;
  for (; n > 1; n >>= 1) ++d;
  return d;
}

// Sorts [first, last). leftmost: no element lies left of the range (else the one left of it is no
// greater than any in it). With Parallel, pieces above sort_leaf fork at every partition and a
// piece that finds the scope stopped is skipped (a piece only swaps inside its own range).
template <bool Parallel, class I, class Less>
void sort_loop(I first, I last, Less& less, int bad_allowed, bool leftmost, cancel_scope* scope) {
  for (;;) {
    const auto n = last - first;
    if constexpr (Parallel) {
      if (!scope->enter()) return;
      if (n <= sort_leaf) return sort_loop<false>(first, last, less, bad_allowed, leftmost, scope);
    }
    if (n < insertion_limit) {
      if (leftmost)
        insertion_sort<false>(first, last, less);
      else
        insertion_sort<true>(first, last, less);
      return;
    }
    choose_pivot(first, last, less);
    if (!leftmost && !less(*(first - 1), *first)) {
      // The pivot equals the element left of the range: split off its copies, never revisited.
      first = partition_left(first, last, less) + 1;
      continue;
    }
    const partition_result r = partition_right(first, last, less);
    const I p = first + r.pivot;
    const auto left_n = r.pivot;
    const auto right_n = n - r.pivot - 1;
    if (left_n < n / 8 || right_n < n / 8) {
      if (--bad_allowed == 0) {
        std::ranges::make_heap(first, last, less);
        std::ranges::sort_heap(first, last, less);
        return;
      }
      break_patterns(first, p);
      break_patterns(p + 1, last);
    } else if (r.already_partitioned && partial_insertion_sort(first, p, less) &&
               partial_insertion_sort(p + 1, last, less)) {
      return;
    }
    if constexpr (Parallel) {
      join([&] { sort_loop<true>(first, p, less, bad_allowed, leftmost, scope); },
           [&] { sort_loop<true>(p + 1, last, less, bad_allowed, false, scope); });
      return;
    } else {
      sort_loop<false>(first, p, less, bad_allowed, leftmost, scope);
      first = p + 1;
      leftmost = false;
    }
  }
}

}  // namespace pdq

// Sequential pattern-defeating quicksort of [first, last).
template <class I, class Less>
void pdq_sort(I first, I last, Less& less) {
  pdq::sort_loop<false>(first, last, less, pdq::log2_floor(last - first), true, nullptr);
}

// The same, forking at every partition of a piece above sort_leaf, after an O(n) check for a
// range that is already sorted or strictly descending (then reversed), which the recursion
// would otherwise only find piece by piece after a full partition. Both scans stop at the
// first element out of order, so on other inputs they cost a few comparisons.
template <class I, class Less>
void parallel_pdq_sort(I first, I last, Less less, cancel_scope& scope) {
  if (last - first < 2) return;
  if (!less(*(first + 1), *first)) {
    if (std::ranges::is_sorted(first, last, less)) return;
  } else if (std::ranges::adjacent_find(first, last, [&](auto&& a, auto&& b) { return !less(b, a); }) == last) {
    std::ranges::reverse(first, last);
    return;
  }
  pdq::sort_loop<true>(first, last, less, pdq::log2_floor(last - first), true, &scope);
}

}  // namespace promptly::detail
