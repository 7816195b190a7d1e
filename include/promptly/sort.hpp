// Parallel sorting (docs/algorithms.md):
//
//   parallel_sort(first, last[, comp[, proj]])          unstable, O(n log n) work
//   parallel_sort(range[, comp[, proj]])
//   parallel_stable_sort(first, last[, comp[, proj]])   stable, O(n log n) work, n extra elements
//   parallel_stable_sort(range[, comp[, proj]])
//
// Random-access iterators (or a random-access range); comp and proj as std::ranges::sort's
// (the default comp is std::ranges::less). Called from a task, the pieces are joined on the
// caller's worker and stay in its pool (level); outside any runtime the sort runs on the
// default runtime (default_runtime.hpp). The algorithms are in detail/sort_impl.hpp.
//
// Exceptions: if a comparison (or projection) throws, the other pieces stop calling the
// comparator, every piece finishes, the range holds a permutation of its input in unspecified
// order, and the first exception thrown is rethrown. parallel_stable_sort may throw
// std::bad_alloc for its buffer before it touches the range. Moves and swaps of elements must
// not throw (with a throwing move, parallel_stable_sort falls back to std::ranges::stable_sort).
#pragma once

#include <algorithm>
#include <functional>
#include <iterator>
#include <ranges>

#include "promptly/default_runtime.hpp"
#include "promptly/detail/sort_impl.hpp"

namespace promptly {

template <std::random_access_iterator I, std::sentinel_for<I> S, class Comp = std::ranges::less,
          class Proj = std::identity>
  requires std::sortable<I, Comp, Proj>
void parallel_sort(I first, S last, Comp comp = {}, Proj proj = {}) {
  const I end = std::ranges::next(first, last);
  detail::run_data_parallel(
      [&] { detail::with_sort_compare<I>(comp, proj, [&](auto less) { detail::parallel_quicksort(first, end, less); }); });
}

template <std::ranges::random_access_range R, class Comp = std::ranges::less, class Proj = std::identity>
  requires std::sortable<std::ranges::iterator_t<R>, Comp, Proj>
void parallel_sort(R&& r, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_sort(std::ranges::begin(r), std::ranges::end(r), std::move(comp), std::move(proj));
}

template <std::random_access_iterator I, std::sentinel_for<I> S, class Comp = std::ranges::less,
          class Proj = std::identity>
  requires std::sortable<I, Comp, Proj>
void parallel_stable_sort(I first, S last, Comp comp = {}, Proj proj = {}) {
  const I end = std::ranges::next(first, last);
  detail::run_data_parallel(
      [&] { detail::with_sort_compare<I>(comp, proj, [&](auto less) { detail::parallel_merge_sort(first, end, less); }); });
}

template <std::ranges::random_access_range R, class Comp = std::ranges::less, class Proj = std::identity>
  requires std::sortable<std::ranges::iterator_t<R>, Comp, Proj>
void parallel_stable_sort(R&& r, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_stable_sort(std::ranges::begin(r), std::ranges::end(r), std::move(comp), std::move(proj));
}

}  // namespace promptly
