// index_range<I>: the half-open run of integers [first, last) that the range form of
// parallel_for hands its body, iterable with a range-for.
//
// Invariant: first() <= last(). A range built with last < first is empty (first, first),
// as a for loop over it would be. Its iterators hold the index itself (they do not refer to
// the range). Not std::ranges::iota_view: clang 14 cannot compile libstdc++ 12's iota_view.
//
// index_box<I, N>: the product of N index_ranges (a 2D tile of rows x columns, a 3D block), the
// piece the multidimensional parallel_for hands its body; box[d] is its range along dimension d.
// size() is the product of the extents, saturated at SIZE_MAX.
//
// Bounds of different integral types (parallel_for(0, v.size(), ...)) meet in their common
// type; a bound that common type cannot represent (a negative first with an unsigned last)
// throws std::out_of_range instead of wrapping around into a huge loop.
#pragma once

#include <array>
#include <concepts>
#include <limits>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace promptly {

// An integer type usable as a loop index: any integral type but bool.
template <class I>
concept loop_index = std::integral<I> && !std::same_as<std::remove_cv_t<I>, bool>;

namespace detail {

// The index type of a loop over [A-value, B-value).
template <loop_index A, loop_index B>
using common_index_t = std::common_type_t<A, B>;

// `v` as the index type C; throws std::out_of_range naming the bound if C cannot hold it.
template <loop_index C, loop_index V>
constexpr C to_index(V v, const char* bound) {
  if (!std::in_range<C>(v))
    throw std::out_of_range(std::string("promptly: loop bound `") + bound + "` = " + std::to_string(v) +
                            " does not fit the loop's index type (the common type of both bounds)");
  return static_cast<C>(v);
}

// The number of indices in [first, last), first <= last, without signed overflow:
// the difference taken in the unsigned type is exact modulo 2^N, and the true
// difference is below 2^N.
template <loop_index I>
constexpr std::make_unsigned_t<I> index_distance(I first, I last) noexcept {
  using U = std::make_unsigned_t<I>;
  return static_cast<U>(static_cast<U>(last) - static_cast<U>(first));
}

// first + n for n <= distance(first, last): no overflow by the same argument
// (conversion of an unsigned value to a signed type is modular since C++20).
template <loop_index I>
constexpr I index_advance(I first, std::make_unsigned_t<I> n) noexcept {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(static_cast<U>(first) + n));
}

}  // namespace detail

// A forward iterator over the integers of an index_range: *it is the index.
template <loop_index I>
class index_iterator {
 public:
  using value_type = I;
  using difference_type = std::ptrdiff_t;
  using iterator_category = std::forward_iterator_tag;

  constexpr index_iterator() noexcept = default;
  constexpr explicit index_iterator(I i) noexcept : i_(i) {}
  constexpr I operator*() const noexcept { return i_; }
  constexpr index_iterator& operator++() noexcept {
    ++i_;
    return *this;
  }
  constexpr index_iterator operator++(int) noexcept {
    index_iterator old = *this;
    ++i_;
    return old;
  }
  friend constexpr bool operator==(index_iterator, index_iterator) noexcept = default;

 private:
  I i_{};
};

template <loop_index I>
class index_range {
 public:
  using value_type = I;

  constexpr index_range(I first, I last) noexcept : first_(first), last_(first < last ? last : first) {}

  // Mixed bound types meet in their common type (see the top of this file).
  template <loop_index A, loop_index B>
    requires(!std::same_as<A, B> && std::same_as<detail::common_index_t<A, B>, I>)
  constexpr index_range(A first, B last)
      : index_range(detail::to_index<I>(first, "first"), detail::to_index<I>(last, "last")) {}

  [[nodiscard]] constexpr I first() const noexcept { return first_; }
  [[nodiscard]] constexpr I last() const noexcept { return last_; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return static_cast<std::size_t>(detail::index_distance(first_, last_)); }
  [[nodiscard]] constexpr bool empty() const noexcept { return first_ == last_; }

  constexpr index_iterator<I> begin() const noexcept { return index_iterator<I>(first_); }
  constexpr index_iterator<I> end() const noexcept { return index_iterator<I>(last_); }

  friend constexpr bool operator==(const index_range&, const index_range&) = default;

 private:
  I first_;
  I last_;
};

template <loop_index A, loop_index B>
index_range(A, B) -> index_range<detail::common_index_t<A, B>>;

template <loop_index I, std::size_t N>
  requires(N >= 1)
class index_box {
 public:
  using value_type = I;
  static constexpr std::size_t rank = N;

  constexpr explicit index_box(const std::array<index_range<I>, N>& dims) noexcept : dims_(dims) {}
  template <std::same_as<index_range<I>>... R>
    requires(sizeof...(R) == N)
  constexpr index_box(R... dims) noexcept : dims_{dims...} {}

  [[nodiscard]] constexpr const index_range<I>& operator[](std::size_t d) const noexcept { return dims_[d]; }
  [[nodiscard]] constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (const auto& r : dims_) {
      if (r.empty()) return 0;
      if (n > std::numeric_limits<std::size_t>::max() / r.size()) n = std::numeric_limits<std::size_t>::max();
      else n *= r.size();
    }
    return n;
  }
  [[nodiscard]] constexpr bool empty() const noexcept { return size() == 0; }

  // The dimension with the most indices (the first of equals).
  [[nodiscard]] constexpr std::size_t longest() const noexcept {
    std::size_t d = 0;
    for (std::size_t k = 1; k < N; ++k)
      if (dims_[k].size() > dims_[d].size()) d = k;
    return d;
  }
  // The two halves of the box cut across dimension d at its middle.
  [[nodiscard]] constexpr std::pair<index_box, index_box> halves(std::size_t d) const noexcept {
    const index_range<I>& r = dims_[d];
    const I mid = detail::index_advance(r.first(), static_cast<std::make_unsigned_t<I>>(r.size() / 2));
    index_box lo = *this;
    index_box hi = *this;
    lo.dims_[d] = index_range<I>(r.first(), mid);
    hi.dims_[d] = index_range<I>(mid, r.last());
    return {lo, hi};
  }

  friend constexpr bool operator==(const index_box&, const index_box&) = default;

 private:
  std::array<index_range<I>, N> dims_;
};

template <loop_index I, std::same_as<index_range<I>>... R>
index_box(index_range<I>, R...) -> index_box<I, 1 + sizeof...(R)>;

}  // namespace promptly
