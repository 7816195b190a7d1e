// The comparison the sorts call: the user's comparator applied through the projection, guarded
// when it may throw or the sort may be cancelled (the invariants of detail/sort_impl.hpp).
#pragma once

#include <exception>
#include <functional>
#include <concepts>
#include <iterator>

#include "promptly/cancellation.hpp"

namespace promptly::detail {

// comp(proj(a), proj(b)) on lvalues: an element is never handed to the user as an rvalue (a
// comparator taking its arguments by value must not move from the elements being sorted).
template <class Comp, class Proj>
struct projected_less {
  Comp* comp;
  Proj* proj;
  template <class A, class B>
  bool operator()(A&& a, B&& b) const {
    return static_cast<bool>(std::invoke(*comp, std::invoke(*proj, a), std::invoke(*proj, b)));
  }
};

// Whether comparing two elements is declared noexcept (then no guard is needed).
template <class I, class Comp, class Proj>
inline constexpr bool nothrow_compare = requires(Comp& c, Proj& p, std::iter_value_t<I>& x) {
  { std::invoke(c, std::invoke(p, x), std::invoke(p, x)) } noexcept;
};

// See the invariants at the top of this file. A comparison made once the scope is stopped (an
// exception, or a stop request) notes that work was skipped.
template <class Less>
struct guarded_less {
  Less less;
  cancel_scope* scope;
  template <class A, class B>
  bool operator()(A&& a, B&& b) const noexcept {
    if (!scope->enter()) return false;
    try {
      return less(a, b);
    } catch (...) {
      scope->record(std::current_exception());
      return false;
    }
  }
};

// +1 if comparing I's elements with Comp (through Proj) is their own operator< (the standard
// less, ranges::less or less<T>), -1 if it is their operator>, 0 otherwise (a projection, a
// user comparator, or iterators that do not yield the elements themselves). The sorts'
// shortcuts (an unobservable stability, key prefixes) apply only to these orders.
template <class I, class Comp, class Proj>
inline constexpr int standard_order = [] {
  using T = std::iter_value_t<I>;
  if constexpr (!std::same_as<Proj, std::identity> || !std::same_as<std::iter_reference_t<I>, T&>)
    return 0;
  else if constexpr (std::same_as<Comp, std::ranges::less> || std::same_as<Comp, std::less<>> ||
                     std::same_as<Comp, std::less<T>>)
    return 1;
  else if constexpr (std::same_as<Comp, std::ranges::greater> || std::same_as<Comp, std::greater<>> ||
                     std::same_as<Comp, std::greater<T>>)
    return -1;
  else
    return 0;
}();

// Calls run(less) with the comparison to sort with: the user's, or, when it may throw or the
// sort may be cancelled, the guarded one.
template <class I, class Comp, class Proj, class Run>
void with_sort_compare(Comp& comp, Proj& proj, cancel_scope& scope, Run&& run) {
  projected_less<Comp, Proj> less{&comp, &proj};
  if (nothrow_compare<I, Comp, Proj> && !scope.cancellable())
    run(less);
  else
    run(guarded_less<projected_less<Comp, Proj>>{less, &scope});
}

}  // namespace promptly::detail
