// Sorting std::string in its standard order by cached key prefixes.
//
// Sorting std::string in place moves every element several times per level, and libstdc++'s
// move of a short string (kept inside the object) is an out-of-line copy of that buffer; every
// comparison reads the characters through a pointer. So a range of std::string in the standard
// less or greater order (no projection) is sorted as records {the 8 bytes of the string at
// offset `skip`, read big-endian; a view of the string; its index} (the key-prefix sort of
// Nyberg et al., "AlphaSort: A RISC Machine Sort", SIGMOD 1994, Sec. 3, with the 8-byte cached
// characters of Bingmann, Eberle and Sanders, "Engineering Parallel String Sorting",
// Algorithmica 2017, Sec. 4): most comparisons are one integer comparison inside a contiguous
// array, and each string then moves twice, into a buffer in sorted order and back.
// `skip` is the longest prefix that every string shares, so common prefixes (URLs, paths) do
// not fill the keys.
//
// Invariants
//  * Key order implies string order: for strings that share their first `skip` bytes, key(a) <
//    key(b) (zero-padded, compared as unsigned bytes, which is char_traits<char>'s order)
//    implies a < b; equal keys fall back to comparing the whole strings (and, for a stable
//    sort, the indices, which makes every record distinct, so the unstable record sort is
//    stable). So the records' order is the strings' order.
//  * The records hold each index of [0, n) exactly once (asserted in Debug builds), so the
//    gather moves every string exactly once; the range is only written after the record sort
//    finished unstopped, by moves that cannot throw, in pieces that are never skipped. A sort
//    cancelled before that leaves the range untouched.
//  * The path declines (returns false, range untouched) when the buffers cannot be allocated or
//    when a sample shows many equal keys (few distinct prefixes after `skip`): comparisons
//    would then read the strings anyway and the records only add moves. The caller then sorts
//    in place.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "promptly/cancellation.hpp"
#include "promptly/detail/pdq_sort.hpp"
#include "promptly/detail/sort_buffer.hpp"
#include "promptly/detail/sort_compare.hpp"
#include "promptly/parallel.hpp"

namespace promptly::detail {

template <class T>
inline constexpr bool is_char_string = false;
template <class A>
inline constexpr bool is_char_string<std::basic_string<char, std::char_traits<char>, A>> = true;

// +1: ascending, -1: descending, 0: this path does not apply (another element type, a
// projection, or a comparator that may order strings differently).
template <class I, class Comp, class Proj>
inline constexpr int key_prefix_direction = is_char_string<std::iter_value_t<I>> ? standard_order<I, Comp, Proj> : 0;

// Below this many strings the records are not worth their set-up.
inline constexpr std::ptrdiff_t key_prefix_min_size = 2 * sort_leaf;
// The sample that decides whether keys tell strings apart, and the share of equal neighbours
// in it (1 in key_prefix_max_tie_share) above which the path declines.
inline constexpr std::size_t key_prefix_sample = 512;
inline constexpr std::size_t key_prefix_max_tie_share = 8;

struct key_prefix_record {
  std::uint64_t key;
  std::string_view text;
  std::size_t index;
};

// Bytes [skip, skip + 8) of s, zero-padded, as a big-endian integer.
inline std::uint64_t key_prefix_at(std::string_view s, std::size_t skip) noexcept {
  unsigned char bytes[8] = {};
  if (skip < s.size()) std::memcpy(bytes, s.data() + skip, std::min<std::size_t>(8, s.size() - skip));
  std::uint64_t k = 0;
  for (unsigned char b : bytes) k = (k << 8) | b;
  return k;
}

// The length of the prefix a shares with b, at most `limit`.
inline std::size_t shared_prefix_length(std::string_view a, std::string_view b, std::size_t limit) noexcept {
  const std::size_t m = std::min({limit, a.size(), b.size()});
  return static_cast<std::size_t>(std::ranges::mismatch(a.substr(0, m), b.substr(0, m)).in1 - a.begin());
}

template <bool Ascending, bool Stable>
struct key_prefix_less {
  bool operator()(const key_prefix_record& x, const key_prefix_record& y) const noexcept {
    const key_prefix_record& a = Ascending ? x : y;
    const key_prefix_record& b = Ascending ? y : x;
    if (a.key != b.key) return a.key < b.key;
    const int c = a.text.compare(b.text);
    if (c != 0 || !Stable) return c < 0;
    return x.index < y.index;  // equal strings keep their order
  }
};

// Whether more than 1 in key_prefix_max_tie_share of neighbours are equal in a sorted sample
// of keys, each taken after the prefix the sampled strings share (the whole range may share
// less; the sample only estimates how often keys will decide). Before anything is allocated,
// so declining costs a sample.
template <class I>
bool key_prefix_keys_tie_often(I first, std::size_t n) {
  const std::size_t m = std::min(n, key_prefix_sample);
  const auto sampled = [&](std::size_t j) { return std::string_view(first[static_cast<std::ptrdiff_t>(j * (n / m))]); };
  std::size_t shared = sampled(0).size();
  for (std::size_t j = 1; j < m; ++j) shared = shared_prefix_length(sampled(j), sampled(0), shared);
  std::vector<std::uint64_t> keys(m);
  for (std::size_t j = 0; j < m; ++j) keys[j] = key_prefix_at(sampled(j), shared);
  std::ranges::sort(keys);
  std::size_t ties = 0;
  for (std::size_t j = 1; j < m; ++j) ties += keys[j] == keys[j - 1];
  return ties * key_prefix_max_tie_share > m;
}

// Sorts [first, last) (Direction as key_prefix_direction) by records; false if it declined,
// the range untouched (see the invariants at the top of this file).
template <int Direction, bool Stable, class I>
bool key_prefix_sort(I first, I last, cancel_scope& scope) {
  using T = std::iter_value_t<I>;
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T>);
  const std::ptrdiff_t n = last - first;
  if (n < key_prefix_min_size) return false;
  const auto un = static_cast<std::size_t>(n);
  if (key_prefix_keys_tie_often(first, un)) return false;
  std::unique_ptr<sort_buffer<key_prefix_record>> records;
  std::unique_ptr<sort_buffer<T>> moved;
  try {
    records = std::make_unique<sort_buffer<key_prefix_record>>(un);
    moved = std::make_unique<sort_buffer<T>>(un);
  } catch (const std::bad_alloc&) {
    return false;
  }
  key_prefix_record* const recs = records->data();  // trivial type: written below, never destroyed
  const std::size_t grain = static_cast<std::size_t>(sort_leaf) * 4;
  cancel_scope every_piece;  // never stopped: a piece skipped here would leave records unset

  // Records with keys at offset 0, and the prefix every string shares with the first.
  const std::string_view first_text(*first);
  std::atomic<std::size_t> shared{first_text.size()};
  auto build = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) {
    std::size_t piece_shared = first_text.size();
    for (std::ptrdiff_t i = lo; i < hi; ++i) {
      const std::string_view s(first[i]);
      std::construct_at(recs + i, key_prefix_record{key_prefix_at(s, 0), s, static_cast<std::size_t>(i)});
      piece_shared = shared_prefix_length(s, first_text, piece_shared);
    }
    // Relaxed: join() orders these updates before the read below.
    std::size_t cur = shared.load(std::memory_order_relaxed);
    while (piece_shared < cur && !shared.compare_exchange_weak(cur, piece_shared, std::memory_order_relaxed)) {
    }
  };
  split_range(std::ptrdiff_t{0}, n, grain, build, every_piece);
  const std::size_t skip = shared.load(std::memory_order_relaxed);
  if (skip >= 4) {  // at least half of every key is the shared prefix: key the bytes after it
    auto rekey = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) {
      for (std::ptrdiff_t i = lo; i < hi; ++i) recs[i].key = key_prefix_at(recs[i].text, skip);
    };
    split_range(std::ptrdiff_t{0}, n, grain, rekey, every_piece);
  }

  key_prefix_less<(Direction > 0), Stable> less;
  std::identity id;
  with_sort_compare<key_prefix_record*>(less, id, scope, [&](auto l) {
    parallel_pdq_sort_unchecked(recs, recs + n, l, scope);
  });
  if (!scope.enter()) return true;  // cancelled: the range is untouched, the skip is noted
#ifndef NDEBUG
  {
    std::vector<bool> seen(un);
    for (std::size_t i = 0; i < un; ++i) {
      assert(recs[i].index < un && !seen[recs[i].index] && "the records hold each index once");
      seen[recs[i].index] = true;
    }
  }
#endif
  // The strings into the buffer in sorted order, then back (each phase in parallel pieces;
  // the second starts once the first has read every source).
  T* const buf = moved->data();
  auto gather = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) {
    for (std::ptrdiff_t i = lo; i < hi; ++i) std::construct_at(buf + i, std::move(first[static_cast<std::ptrdiff_t>(recs[i].index)]));
  };
  split_range(std::ptrdiff_t{0}, n, grain, gather, every_piece);
  moved->mark_constructed();
  auto put_back = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) { std::ranges::move(buf + lo, buf + hi, first + lo); };
  split_range(std::ptrdiff_t{0}, n, grain, put_back, every_piece);
  return true;
}

}  // namespace promptly::detail
