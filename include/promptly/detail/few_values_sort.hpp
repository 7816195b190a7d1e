// Sorting integers that take few distinct values by counting them.
//
// A quicksort of n keys with k distinct values still makes O(n log k) comparisons and moves
// every key at each level; counting makes two passes: read every key once, counting each of
// the values, then write each value as many times as it was counted, in order (a counting sort
// over the values found, as the equality buckets of Axtmann, Witt, Ferizovic and Sanders,
// "In-place Parallel Super Scalar Samplesort (IPS4o)", ESA 2017, Sec. 3, but with every value
// a bucket). Only integers in their standard order (no projection) take this path: two of them
// that compare equal are the same bits, so writing a value back is the same as moving an
// element there.
//
// Invariants
//  * The values are the distinct keys of an evenly spaced sample of few_values_sample keys (the
//    path applies only when there are at most few_values_max of them), plus the keys the sample
//    missed, counted apart, again at most few_values_max of them over the whole range. One more
//    stops the count (every piece stops at its start; a piece holding more than
//    few_values_max such keys stops at once) and the path declines: it returns false with the
//    range untouched. So a range of many values the sample did not show costs a read of a
//    few pieces, and a range of few values with rare others is still counted.
//  * The range is written only after the count finished unstopped and found every key, in
//    pieces that are never skipped, by stores that cannot throw, so the range is either
//    untouched or sorted, and a permutation of its input both times. A sort cancelled during
//    the count returns true (the cancellation is noted in the scope) with the range untouched.
//  * The counts add up to n (asserted in Debug builds).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <type_traits>
#include <utility>

#include "promptly/cancellation.hpp"
#include "promptly/detail/sort_compare.hpp"
#include "promptly/parallel.hpp"

namespace promptly::detail {

inline constexpr std::ptrdiff_t few_values_min_size = std::ptrdiff_t{1} << 16;
inline constexpr std::size_t few_values_sample = 512;
inline constexpr std::size_t few_values_max = 32;

// +1: ascending, -1: descending, 0: this path does not apply (not an integer of at most 64
// bits, a projection, or a comparator other than the standard ones).
template <class I, class Comp, class Proj>
inline constexpr int few_values_direction = [] {
  using T = std::iter_value_t<I>;
  if constexpr (std::integral<T> && sizeof(T) <= 8 && std::contiguous_iterator<I>)
    return standard_order<I, Comp, Proj>;
  else
    return 0;
}();

// The slot of each of the sampled values: a table indexed by key - lowest when the values span
// at most 4096 (a key outside it, or on an empty entry, is unknown), else a linear-probing hash
// table of 128 slots (no more than a quarter full).
template <class T>
class few_values_index {
 public:
  static constexpr std::uint8_t none = 0xff;

  // `values`: sorted, distinct, at most few_values_max.
  few_values_index(const T* values, std::size_t count) noexcept : values_(values) {
    const auto span = static_cast<std::uint64_t>(values[count - 1]) - static_cast<std::uint64_t>(values[0]);
    direct_ = span < direct_size;
    lowest_ = values[0];
    std::fill(table_.begin(), table_.end(), none);
    for (std::size_t j = 0; j < count; ++j) {
      std::size_t at = direct_ ? offset(values[j]) : hash(values[j]);
      while (!direct_ && table_[at] != none) at = (at + 1) % hash_size;
      table_[at] = static_cast<std::uint8_t>(j);
    }
  }

  // The value's slot, or none.
  std::uint8_t slot_of(T key) const noexcept {
    if (direct_) {
      const std::uint64_t at = offset(key);
      return at < direct_size ? table_[at] : none;
    }
    for (std::size_t at = hash(key);; at = (at + 1) % hash_size) {
      const std::uint8_t j = table_[at];
      if (j == none || values_[j] == key) return j;
    }
  }

 private:
  static constexpr std::size_t direct_size = 4096;
  static constexpr std::size_t hash_size = 128;  // > 4 * few_values_max: probes end at an empty slot
  std::uint64_t offset(T key) const noexcept {
    return static_cast<std::uint64_t>(key) - static_cast<std::uint64_t>(lowest_);  // wraps below lowest_: out of range
  }
  static std::size_t hash(T key) noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ULL) >> 57);  // 7 bits
  }

  const T* values_;
  bool direct_ = false;
  T lowest_{};
  std::array<std::uint8_t, direct_size> table_{};
};

// The distinct values of an evenly spaced sample, sorted ascending; 0 if there are more than
// few_values_max.
template <class I, class T = std::iter_value_t<I>>
std::size_t sample_few_values(I first, std::size_t n, std::array<T, few_values_sample>& sample) {
  for (std::size_t j = 0; j < few_values_sample; ++j)
    sample[j] = first[static_cast<std::ptrdiff_t>(j * (n / few_values_sample))];
  std::sort(sample.begin(), sample.end());
  const auto count = static_cast<std::size_t>(std::unique(sample.begin(), sample.end()) - sample.begin());
  return count <= few_values_max ? count : 0;
}

// The keys of one piece that the sample missed: at most few_values_max distinct ones, counted.
template <class T>
struct few_values_extras {
  std::array<T, few_values_max> values{};
  std::array<std::uint64_t, few_values_max> counts{};
  std::size_t size = 0;

  // Counts `times` more of key; false when the key would be one too many.
  bool add(T key, std::uint64_t times = 1) noexcept {
    for (std::size_t j = 0; j < size; ++j)
      if (values[j] == key) {
        counts[j] += times;
        return true;
      }
    if (size == few_values_max) return false;
    values[size] = key;
    counts[size++] = times;
    return true;
  }
};

// Sorts [first, last) (Direction as few_values_direction) by counting; false if it declined,
// the range untouched (see the invariants at the top of this file).
template <int Direction, class I>
bool few_values_sort(I first, I last, cancel_scope& scope) {
  using T = std::iter_value_t<I>;
  const std::ptrdiff_t n = last - first;
  if (n < few_values_min_size) return false;
  std::array<T, few_values_sample> sampled;
  const std::size_t k = sample_few_values(first, static_cast<std::size_t>(n), sampled);
  if (k == 0) return false;
  const few_values_index<T> index(sampled.data(), k);
  const T* const keys = std::to_address(first);

  // Count. Four interleaved count rows, so that runs of one value do not wait on one counter.
  std::array<std::atomic<std::uint64_t>, few_values_max> counts{};
  std::mutex missed_lock;
  few_values_extras<T> missed;  // the keys the sample missed, over all pieces (under missed_lock)
  std::atomic<bool> too_many{false};
  constexpr std::ptrdiff_t grain = std::ptrdiff_t{1} << 16;
  // Counts [lo, hi) into counts and missed; false when there are too many missed values.
  auto count_keys = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) {
    std::array<std::array<std::uint64_t, few_values_max>, 4> rows{};
    few_values_extras<T> extras;
    auto count_one = [&](std::size_t row, T key) {
      const std::uint8_t j = index.slot_of(key);
      if (j == few_values_index<T>::none) return extras.add(key);
      ++rows[row][j];
      return true;
    };
    std::ptrdiff_t i = lo;
    for (; i + 4 <= hi; i += 4) {
      const std::uint8_t a = index.slot_of(keys[i]), b = index.slot_of(keys[i + 1]), c = index.slot_of(keys[i + 2]),
                         d = index.slot_of(keys[i + 3]);
      if (((a | b | c | d) & 0x80) == 0) [[likely]] {  // slots are below few_values_max: only `none` has the bit
        ++rows[0][a], ++rows[1][b], ++rows[2][c], ++rows[3][d];
        continue;
      }
      for (std::ptrdiff_t q = 0; q < 4; ++q)
        if (!count_one(static_cast<std::size_t>(q), keys[i + q])) return false;
    }
    for (; i < hi; ++i)
      if (!count_one(0, keys[i])) return false;
    // Relaxed: join() orders these additions before the reads below.
    for (std::size_t j = 0; j < k; ++j)
      counts[j].fetch_add(rows[0][j] + rows[1][j] + rows[2][j] + rows[3][j], std::memory_order_relaxed);
    if (extras.size == 0) return true;
    std::lock_guard hold(missed_lock);
    for (std::size_t j = 0; j < extras.size; ++j)
      if (!missed.add(extras.values[j], extras.counts[j])) return false;
    return true;
  };
  auto count_piece = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) {
    // Relaxed both: a hint to the other pieces; the result is read after join().
    if (!too_many.load(std::memory_order_relaxed) && !count_keys(lo, hi))
      too_many.store(true, std::memory_order_relaxed);
  };
  split_range(std::ptrdiff_t{0}, n, static_cast<std::size_t>(grain), count_piece, scope);
  // Declined: the quicksort runs. A piece this sort's cancellation skipped is noted in the
  // scope, and the quicksort finds it stopped.
  if (too_many.load(std::memory_order_relaxed)) return false;
  if (!scope.enter()) return true;  // cancelled: the range is untouched, the skip is noted

  // Every value with its count, in the sort's direction, and where its run starts.
  std::array<std::pair<T, std::uint64_t>, 2 * few_values_max> runs;
  std::size_t m = 0;
  for (std::size_t j = 0; j < k; ++j) runs[m++] = {sampled[j], counts[j].load(std::memory_order_relaxed)};
  for (std::size_t j = 0; j < missed.size; ++j) runs[m++] = {missed.values[j], missed.counts[j]};
  std::sort(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(m), [](const auto& x, const auto& y) {
    return Direction > 0 ? x.first < y.first : y.first < x.first;
  });
  std::array<std::ptrdiff_t, 2 * few_values_max + 1> start{};
  for (std::size_t r = 0; r < m; ++r) start[r + 1] = start[r] + static_cast<std::ptrdiff_t>(runs[r].second);
  assert(start[m] == n && "the counts add up to n");

  // Write: each piece fills the parts of the values' runs that fall inside it.
  cancel_scope every_piece;  // never stopped: a piece skipped here would leave the range half written
  auto write_piece = [&](std::ptrdiff_t lo, std::ptrdiff_t hi) {
    const auto ends = start.begin() + 1;  // run r ends at ends[r]
    auto r = static_cast<std::size_t>(std::upper_bound(ends, ends + static_cast<std::ptrdiff_t>(m), lo) - ends);
    for (std::ptrdiff_t at = lo; at < hi; ++r) {
      const std::ptrdiff_t end = std::min(hi, start[r + 1]);
      std::fill(first + at, first + end, runs[r].first);
      at = end;
    }
  };
  split_range(std::ptrdiff_t{0}, n, static_cast<std::size_t>(grain), write_piece, every_piece);
  return true;
}

}  // namespace promptly::detail
