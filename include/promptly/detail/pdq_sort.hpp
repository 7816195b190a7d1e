// The unstable sort behind parallel_sort: a pattern-defeating quicksort (Orson Peters,
// "Pattern-defeating Quicksort", 2021), run sequentially on a piece or, with Parallel, with
// join() on the two sides of every partition of a piece larger than sort_leaf.
//
//  * Pivot: median of three, or for more than ninther_threshold elements Tukey's ninther
//    (Bentley and McIlroy, "Engineering a Sort Function", Sec. 5), moved to the front.
//  * Partition: Hoare's, elements equal to the pivot going right, with the comparisons run in
//    blocks of block_size that record misplaced offsets without branching on the answers; the
//    misplaced elements are then moved across in one cyclic permutation (Edelkamp and Weiss,
//    "BlockQuicksort: Avoiding Branch Mispredictions in Quicksort", Sec. 3), down to the last
//    elements of the range. A random comparison result costs no misprediction; each element
//    is still compared once, and misplaced pairs cost 2 moves instead of a swap's 3, so the
//    block form is used for every type, as Rust's and Rayon's pdqsort do (on 10^6 strings it
//    took about 0.8x the CPU time of the scanning partition, bench/results/algorithms/).
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
//    insertion sifts, the first of a block partition's cyclic permutation), and moves must not
//    throw (sort.hpp), so the range stays a permutation. The block partition only reads and
//    moves inside its range, whatever the comparison answers.
//  * Every loop that advances while the comparison answers false is bounded by the range; loops
//    that advance while it answers true rely on a sentinel (an element known not to compare
//    true), which the switch of a guarded comparison to "always false" only makes stop sooner.
//    So a comparator stopped midway leaves every loop in bounds.
//  * Pieces run in parallel only touch their own range; they read the element just left of it
//    (the partition's pivot, which no piece writes).
#pragma once

#include <algorithm>
#include <atomic>
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
// One-byte offsets per side (so at most 256): 128 keeps a block of 4-byte keys within eight
// cache lines and its offsets within two.
inline constexpr std::ptrdiff_t block_size = 128;

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

// Moves k misplaced pairs across: the elements at l + at_left[i] (which go right) and at
// r - 1 - at_right[i] (which go left), as one cyclic permutation through a held element rather
// than k swaps: 2k + 1 moves instead of 3k (Edelkamp and Weiss, "BlockQuicksort", Sec. 3.1).
template <class I>
void move_misplaced(I l, const unsigned char* at_left, I r, const unsigned char* at_right, std::ptrdiff_t k) {
  std::iter_value_t<I> held = std::ranges::iter_move(l + at_left[0]);
  *(l + at_left[0]) = std::ranges::iter_move(r - 1 - at_right[0]);
  for (std::ptrdiff_t i = 1; i < k; ++i) {
    *(r - 1 - at_right[i - 1]) = std::ranges::iter_move(l + at_left[i]);
    *(l + at_left[i]) = std::ranges::iter_move(r - 1 - at_right[i]);
  }
  *(r - 1 - at_right[k - 1]) = std::move(held);
}

// Block partition of the unknown [first, last): on entry [lo_begin, first) holds elements for
// which goes_left is true, [last, end) elements for which it is false; returns the boundary (Edelkamp
// and Weiss, "BlockQuicksort: Avoiding Branch Mispredictions in Quicksort", Sec. 3): a block
// of block_size elements from each end is classified into a buffer of offsets without
// branching on the answers, then the misplaced pairs are moved across; a block whose listed
// elements are all placed is done and the next one is classified. The last round sizes the
// two blocks to cover exactly what is left, so every element is classified branch-free (no
// scan at the end); the one block that can still hold listed elements then moves them to its
// far end.
template <class I, class GoesLeft>
I block_partition_range(I first, I last, GoesLeft goes_left, bool& swapped) {
  unsigned char at_left[block_size];
  unsigned char at_right[block_size];
  // Listed (misplaced) offsets still to move: at_left[begin_l, end_l), at_right[begin_r, end_r).
  std::ptrdiff_t begin_l = 0, end_l = 0, begin_r = 0, end_r = 0;
  std::ptrdiff_t size_l = block_size, size_r = block_size;
  I l = first;
  I r = last;
  // Invariant: [first, l) goes left and [r, last) goes right; the left block [l, l + size_l)
  // is classified while begin_l < end_l (its unlisted elements go left), likewise the right
  // block [r - size_r, r); at most one of them still has listed elements after each round.
  for (;;) {
    const std::ptrdiff_t unknown = r - l;
    const bool last_round = unknown <= 2 * block_size;
    if (last_round) {
      if (begin_l < end_l) {
        size_r = unknown - size_l;
      } else if (begin_r < end_r) {
        size_l = unknown - size_r;
      } else {
        size_l = unknown / 2;
        size_r = unknown - size_l;
      }
      assert(0 <= size_l && size_l <= block_size && 0 <= size_r && size_r <= block_size);
    }
    // The classification loops are unrolled 8 times, as Peters' pdqsort does by hand: their
    // only dependency from one element to the next is the count of misplaced ones (measured:
    // 0.94x the CPU time of the rolled loop on 10^7 random keys).
    if (begin_l == end_l) {
      begin_l = end_l = 0;
#pragma GCC unroll 8
      for (std::ptrdiff_t i = 0; i < size_l; ++i) {
        at_left[end_l] = static_cast<unsigned char>(i);
        end_l += !goes_left(l[i]);
      }
    }
    if (begin_r == end_r) {
      begin_r = end_r = 0;
#pragma GCC unroll 8
      for (std::ptrdiff_t i = 0; i < size_r; ++i) {
        at_right[end_r] = static_cast<unsigned char>(i);
        end_r += goes_left(*(r - 1 - i));
      }
    }
    const std::ptrdiff_t k = std::min(end_l - begin_l, end_r - begin_r);
    if (k > 0) {
      move_misplaced(l, at_left + begin_l, r, at_right + begin_r, k);
      swapped = true;
      begin_l += k;
      begin_r += k;
    }
    if (begin_l == end_l) l += size_l;
    if (begin_r == end_r) r -= size_r;
    if (last_round) break;
  }
  // What is left is one classified block, [l, r): its listed elements go to its far end, the
  // highest offset first (so each lands past every element still to be placed).
  if (begin_l < end_l) {
    assert(r - l == size_l);
    while (begin_l < end_l) {
      const I from = l + at_left[--end_l];
      --r;
      if (from != r) {
        std::ranges::iter_swap(from, r);
        swapped = true;
      }
    }
    return r;
  }
  if (begin_r < end_r) {
    assert(r - l == size_r);
    while (begin_r < end_r) {
      const I from = r - 1 - at_right[--end_r];
      if (from != l) {
        std::ranges::iter_swap(from, l);
        swapped = true;
      }
      ++l;
    }
    return l;
  }
  assert(l == r);
  return l;
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
  const I mid = block_partition_range(lo, last, goes_left, swapped);
  assert(first < mid && mid <= last);  // the pivot's place is inside the range
  const I p = mid - 1;
  *first = std::ranges::iter_move(p);
  *p = std::move(pivot);
  return {p - first, !swapped};
}

// Partitions [first, last) around *first, elements equal to the pivot going left: [first, p]
// not greater than the pivot, (p, last) greater. Returns p. Branch-free in blocks like
// partition_right: with few distinct keys the answers are near random (10^8 keys of 16 values,
// one thread: 410 ms against 467-488 ms with a scanning partition).
template <class I, class Less>
I partition_left(I first, I last, Less& less) {
  std::iter_value_t<I> pivot = std::ranges::iter_move(first);
  bool swapped = false;
  const I mid = block_partition_range(first + 1, last, [&](auto&& x) { return !less(pivot, x); }, swapped);
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

// Adjacent pairs are compared in chunks of this many without an exit inside a chunk, so that the
// comparisons of plain keys vectorize (10^7 uint32: 5.5 ms against std::ranges::adjacent_find's
// 8.3 ms, bench/results/algorithms/presorted/). A chunk wastes at most scan_chunk - 1
// comparisons on an input that is not in order.
inline constexpr std::ptrdiff_t scan_chunk = 64;

// The presorted checks run in pieces of at least this many elements, forked with join() when
// parallel: ~20 us of scanning each (10^7 keys in 5.5 ms), against a join's tens of ns.
inline constexpr std::ptrdiff_t scan_piece = std::ptrdiff_t{1} << 15;

// Whether in_order(first[k - 1], first[k]) holds for every k in [from, to), from >= 1, for at
// most scan_chunk pairs: counted without an exit, so the comparisons of plain keys vectorize.
template <class I, class InOrder>
bool chunk_pairs_hold(I first, std::ptrdiff_t from, std::ptrdiff_t to, InOrder& in_order) {
  unsigned out_of_order = 0;
  for (std::ptrdiff_t k = from; k < to; ++k) out_of_order += !in_order(first[k - 1], first[k]);
  return out_of_order == 0;
}

// The same for any number of pairs, a chunk at a time.
template <class I, class InOrder>
bool adjacent_pairs_hold(I first, std::ptrdiff_t from, std::ptrdiff_t to, InOrder& in_order) {
  for (std::ptrdiff_t k = from; k < to; k += scan_chunk)
    if (!chunk_pairs_hold(first, k, std::min(k + scan_chunk, to), in_order)) return false;
  return true;
}

// Runs piece(a, b) on pieces of [lo, hi) of at least scan_piece elements, forked with join()
// when Parallel, after link(mid) at every split point: link sees the range before either side
// has started. A piece or link that answers false sets `failed`, after which no piece starts.
template <bool Parallel, class Piece, class Link>
void scan_in_pieces(std::ptrdiff_t lo, std::ptrdiff_t hi, Piece& piece, Link& link, std::atomic<bool>& failed) {
  // Relaxed: `failed` only cuts work short; join() orders each piece's result before the caller's read.
  if (failed.load(std::memory_order_relaxed)) return;
  if (!Parallel || hi - lo < 2 * scan_piece) {
    if (!piece(lo, hi)) failed.store(true, std::memory_order_relaxed);
    return;
  }
  const std::ptrdiff_t mid = lo + (hi - lo) / 2;
  if (!link(mid)) {
    failed.store(true, std::memory_order_relaxed);
    return;
  }
  join([&] { scan_in_pieces<Parallel>(lo, mid, piece, link, failed); },
       [&] { scan_in_pieces<Parallel>(mid, hi, piece, link, failed); });
}

// Whether [first, last) is in order: no element less than the one before it.
template <bool Parallel, class I, class Less>
bool is_sorted_range(I first, I last, Less& less) {
  auto in_order = [&](auto&& a, auto&& b) { return !less(b, a); };
  // Piece [a, b) checks the pairs ending in it; the one across a split belongs to the right side.
  auto piece = [&](std::ptrdiff_t a, std::ptrdiff_t b) { return adjacent_pairs_hold(first, std::max(a, std::ptrdiff_t{1}), b, in_order); };
  auto link = [](std::ptrdiff_t) { return true; };
  std::atomic<bool> failed{false};
  scan_in_pieces<Parallel>(0, last - first, piece, link, failed);
  return !failed.load(std::memory_order_relaxed);
}

// Reverses [first, last) if it is strictly descending, in one pass: each chunk of the front half
// and its mirror in the back half are checked, then swapped, so each element is read once before
// it moves (a check and then std::reverse read the range twice). Returns false once a check
// fails, leaving the range reversed as far as it was checked: a permutation, which the quicksort
// that follows does not mind (its cost is bounded by the swaps made, at most n / 2).
//
// Pieces are ranges [a, b) of front positions (b <= n / 2); piece [a, b) owns the positions
// [a, b) and their mirrors [n - b, n - a), and the pairs inside them. The pairs that cross pieces
// (at a and at n - a) are checked at the split, before either piece swaps (scan_in_pieces), and
// the one or two pairs at the centre (which no swap moves out of order) before any piece starts.
template <bool Parallel, class I, class Less>
bool reverse_if_descending(I first, I last, Less& less) {
  auto descends = [&](auto&& a, auto&& b) { return less(b, a); };
  const std::ptrdiff_t n = last - first;
  const std::ptrdiff_t m = n / 2;
  if (n < 2) return true;
  // The centre: (m - 1, m) and, for odd n, (m, m + 1).
  if (!descends(first[m - 1], first[m]) || (n % 2 == 1 && !descends(first[m], first[m + 1]))) return false;
  auto link = [&](std::ptrdiff_t a) {
    return descends(first[a - 1], first[a]) && descends(first[n - a - 1], first[n - a]);
  };
  auto piece = [&](std::ptrdiff_t a, std::ptrdiff_t b) {
    for (std::ptrdiff_t c = a; c < b; c += scan_chunk) {
      const std::ptrdiff_t e = std::min(scan_chunk, b - c);
      // Front [c, c + e) and back [n - c - e, n - c); the pairs that join them to the chunk
      // swapped just before are read through the swap: what was at c - 1 is at n - c, and what
      // was at n - c is at c - 1.
      if (!chunk_pairs_hold(first, c + 1, c + e, descends) || !chunk_pairs_hold(first, n - c - e + 1, n - c, descends) ||
          (c > a && !(descends(first[n - c], first[c]) && descends(first[n - c - 1], first[c - 1]))))
        return false;
      for (std::ptrdiff_t j = c; j < c + e; ++j) std::ranges::iter_swap(first + j, first + (n - 1 - j));
    }
    return true;
  };
  std::atomic<bool> failed{false};
  scan_in_pieces<Parallel>(0, m, piece, link, failed);
  return !failed.load(std::memory_order_relaxed);
}

}  // namespace pdq

// Sequential pattern-defeating quicksort of [first, last).
template <class I, class Less>
void pdq_sort(I first, I last, Less& less) {
  pdq::sort_loop<false>(first, last, less, pdq::log2_floor(last - first), true, nullptr);
}

// Whether [first, last) is already sorted or strictly descending (then reversed): an O(n) check
// that the recursion would otherwise only make piece by piece after a full partition. Both
// scans stop within a chunk of the first element out of order, so on other inputs they cost a
// few comparisons.
template <class I, class Less>
bool parallel_presorted(I first, I last, Less& less) {
  if (last - first < 2) return true;
  if (!less(*(first + 1), *first)) return pdq::is_sorted_range<true>(first, last, less);
  return pdq::reverse_if_descending<true>(first, last, less);
}

// The sequential sort, forking at every partition of a piece above sort_leaf.
template <class I, class Less>
void parallel_pdq_sort_unchecked(I first, I last, Less less, cancel_scope& scope) {
  pdq::sort_loop<true>(first, last, less, pdq::log2_floor(last - first), true, &scope);
}

}  // namespace promptly::detail
