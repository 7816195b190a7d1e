// Parallel sorting (docs/algorithms.md):
//
//   parallel_sort(first, last[, comp[, proj]])          unstable, O(n log n) work
//   parallel_sort(range[, comp[, proj]])
//   parallel_stable_sort(first, last[, comp[, proj]])   stable, O(n log n) work, n extra elements
//                                                        (none for integers in their natural
//                                                        order, where stability is unobservable)
//   parallel_stable_sort(range[, comp[, proj]])
//
// Random-access iterators (or a random-access range); comp and proj as std::ranges::sort's
// (the default comp is std::ranges::less). Called from a task, the pieces are joined on the
// caller's worker and stay in its pool (level); outside any runtime the sort runs on the
// default runtime (default_runtime.hpp). The algorithms are in detail/sort_impl.hpp.
//
// Each also takes a cancellation token (a std::stop_token) as its first argument
// (cancellation.hpp). Exceptions and cancellation: if a comparison (or projection) throws, or
// the token is requested, the other pieces stop calling the comparator (quicksort pieces not
// yet started are skipped), every piece finishes, the range holds a permutation of its input
// in unspecified order, and the first exception thrown is rethrown, else promptly::cancelled
// if the stop request cut the sort short. parallel_stable_sort may throw
// std::bad_alloc for its buffer before it touches the range. Moves and swaps of elements must
// not throw (with a throwing move, parallel_stable_sort falls back to std::ranges::stable_sort).
#pragma once

#include <algorithm>
#include <concepts>
#include <type_traits>
#include <utility>
#include <functional>
#include <iterator>
#include <ranges>

#include "promptly/cancellation.hpp"
#include "promptly/default_runtime.hpp"
#include "promptly/detail/sort_impl.hpp"

namespace promptly {

template <std::random_access_iterator I, std::sentinel_for<I> S, class Comp = std::ranges::less,
          class Proj = std::identity>
  requires std::sortable<I, Comp, Proj>
void parallel_sort(cancellation_token stop, I first, S last, Comp comp = {}, Proj proj = {}) {
  const I end = std::ranges::next(first, last);
  detail::run_pieces(std::move(stop), "parallel_sort", [&](detail::cancel_scope& sc) {
    detail::with_sort_compare<I>(comp, proj, sc, [&](auto less) { detail::sort_unstable<Comp, Proj>(first, end, less, sc); });
  });
}

template <std::ranges::random_access_range R, class Comp = std::ranges::less, class Proj = std::identity>
  requires std::sortable<std::ranges::iterator_t<R>, Comp, Proj>
void parallel_sort(cancellation_token stop, R&& r, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_sort(std::move(stop), std::ranges::begin(r), std::ranges::end(r), std::move(comp), std::move(proj));
}

template <std::random_access_iterator I, std::sentinel_for<I> S, class Comp = std::ranges::less,
          class Proj = std::identity>
  requires std::sortable<I, Comp, Proj>
void parallel_stable_sort(cancellation_token stop, I first, S last, Comp comp = {}, Proj proj = {}) {
  const I end = std::ranges::next(first, last);
  detail::run_pieces(std::move(stop), "parallel_stable_sort", [&](detail::cancel_scope& sc) {
    detail::with_sort_compare<I>(comp, proj, sc, [&](auto less) { detail::sort_stable<Comp, Proj>(first, end, less, sc); });
  });
}

template <std::ranges::random_access_range R, class Comp = std::ranges::less, class Proj = std::identity>
  requires std::sortable<std::ranges::iterator_t<R>, Comp, Proj>
void parallel_stable_sort(cancellation_token stop, R&& r, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_stable_sort(std::move(stop), std::ranges::begin(r), std::ranges::end(r), std::move(comp),
                                 std::move(proj));
}

// The same without a token (explicit overloads, so that `{}` still names the default comparator).
template <std::random_access_iterator I, std::sentinel_for<I> S, class Comp = std::ranges::less,
          class Proj = std::identity>
  requires std::sortable<I, Comp, Proj>
void parallel_sort(I first, S last, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_sort(cancellation_token{}, std::move(first), std::move(last), std::move(comp), std::move(proj));
}

template <std::ranges::random_access_range R, class Comp = std::ranges::less, class Proj = std::identity>
  requires std::sortable<std::ranges::iterator_t<R>, Comp, Proj>
void parallel_sort(R&& r, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_sort(cancellation_token{}, std::ranges::begin(r), std::ranges::end(r), std::move(comp), std::move(proj));
}

template <std::random_access_iterator I, std::sentinel_for<I> S, class Comp = std::ranges::less,
          class Proj = std::identity>
  requires std::sortable<I, Comp, Proj>
void parallel_stable_sort(I first, S last, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_stable_sort(cancellation_token{}, std::move(first), std::move(last), std::move(comp),
                                 std::move(proj));
}

template <std::ranges::random_access_range R, class Comp = std::ranges::less, class Proj = std::identity>
  requires std::sortable<std::ranges::iterator_t<R>, Comp, Proj>
void parallel_stable_sort(R&& r, Comp comp = {}, Proj proj = {}) {
  promptly::parallel_stable_sort(cancellation_token{}, std::ranges::begin(r), std::ranges::end(r), std::move(comp),
                                 std::move(proj));
}

}  // namespace promptly
