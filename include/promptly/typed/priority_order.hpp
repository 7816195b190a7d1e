// Priorities as user-defined types with a declared order ("Responsive
// Parallelism with Futures and State", PLDI 2020, Sec. 4.2: "each priority is
// represented as a class"; "Fairness in Responsive Parallelism", ICFP 2019,
// Sec. 2.1: the order may be total or partial).
//
//   struct ui {}; struct fetch {}; struct log {}; struct batch {};
//   using order = promptly::priority_order<
//       promptly::before<ui, fetch>,              // ui is more urgent than fetch
//       promptly::chain<ui, log, batch>,          // ui > log > batch
//       promptly::before<fetch, batch>>;          // fetch and log stay unrelated
//
//   order::size                          4
//   order::level_of<fetch>               the runtime level fetch's tasks run at
//   order::at_least_as_urgent<ui, log>   true; reflexive and transitive
//   order::at_least_as_urgent<fetch, log>  false: unrelated
//
// The order is linearised into levels 0..size-1 by a topological sort at
// compile time (the fairly prompt paper, footnote 1; order_analysis.hpp); a total order
// keeps its declaration order. A cyclic declaration fails to compile as
// soon as the order is used, with promptly::priority_cycle_error<...>
// naming the priorities on the cycle. A program may declare at most
// max_levels (64) priorities, and the runtime it runs on needs at least
// order::size levels (typed::run checks; runtime_config::levels).
//
// Invariants
//  * Every priority type appears once in `priorities`, in order of first
//    mention; relations may repeat or be implied by others.
//  * at_least_as_urgent<A, B> implies level_of<A> <= level_of<B>.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "promptly/typed/order_analysis.hpp"
#include "promptly/typed/type_name.hpp"

namespace promptly {

// Declares Higher more urgent than Lower.
template <class Higher, class Lower>
struct before {};

// Declares P0 more urgent than P1, P1 than P2, and so on; chain<P> declares
// a priority unrelated to any other.
template <class... Ps>
struct chain {};

// Instantiated when a priority_order's relations have a cycle: the template
// arguments are the priorities on it, each declared more urgent than the
// next and the last more urgent than the first.
template <class... OnTheCycle>
struct priority_cycle_error {
  static_assert(sizeof...(OnTheCycle) == 0,
                "promptly::priority_order: the declared relations form a cycle, so no priority can be placed "
                "first; the priorities on the cycle are the template arguments of priority_cycle_error<...> "
                "(each declared more urgent than the next, the last more urgent than the first)");
  static constexpr bool value = true;
};

// Instantiated when a priority is used with an order that does not declare it.
template <class Priority, class Order>
struct priority_not_in_order_error {
  static_assert(sizeof(Priority) == 0,
                "promptly::priority_order: this priority (the first template argument of "
                "priority_not_in_order_error<...>) is not declared in the order (the second); add a "
                "promptly::before<...> or promptly::chain<...> that mentions it");
  static constexpr bool value = true;
};

namespace detail {

template <class...>
struct type_list {};

template <std::size_t I, class List>
struct nth;
template <std::size_t I, class... Ts>
struct nth<I, type_list<Ts...>> {
  using type = std::tuple_element_t<I, std::tuple<Ts...>>;
};
template <std::size_t I, class List>
using nth_t = typename nth<I, List>::type;

template <class... Lists>
struct concat {
  using type = type_list<>;
};
template <class... As>
struct concat<type_list<As...>> {
  using type = type_list<As...>;
};
template <class... As, class... Bs, class... Rest>
struct concat<type_list<As...>, type_list<Bs...>, Rest...> : concat<type_list<As..., Bs...>, Rest...> {};

template <class Acc, class List>
struct unique_fold {
  using type = Acc;
};
template <class... Acc, class T, class... Rest>
struct unique_fold<type_list<Acc...>, type_list<T, Rest...>>
    : unique_fold<std::conditional_t<(std::is_same_v<T, Acc> || ...), type_list<Acc...>, type_list<Acc..., T>>,
                  type_list<Rest...>> {};

// before<A, B> for each adjacent pair of a chain.
template <class List>
struct chain_edges {
  using type = type_list<>;
};
template <class A, class B, class... Rest>
struct chain_edges<type_list<A, B, Rest...>> {
  using type = typename concat<type_list<before<A, B>>, typename chain_edges<type_list<B, Rest...>>::type>::type;
};

template <class R>
struct relation_parts;  // undefined: not a relation
template <class H, class L>
struct relation_parts<before<H, L>> {
  using nodes = type_list<H, L>;
  using edges = type_list<before<H, L>>;
};
template <class... Ps>
struct relation_parts<chain<Ps...>> {
  using nodes = type_list<Ps...>;
  using edges = typename chain_edges<type_list<Ps...>>::type;
};

template <class T, class... Ts>
constexpr unsigned index_in(type_list<Ts...>) noexcept {
  constexpr bool match[] = {std::is_same_v<T, Ts>..., false};
  unsigned i = 0;
  while (i < sizeof...(Ts) && !match[i]) ++i;
  return i;
}

template <class Nodes, class... Hs, class... Ls>
constexpr std::array<priority_edge, sizeof...(Hs)> edge_array(type_list<before<Hs, Ls>...>) noexcept {
  return {priority_edge{index_in<Hs>(Nodes{}), index_in<Ls>(Nodes{})}...};
}

template <class... Ps>
constexpr std::array<std::string_view, sizeof...(Ps)> names_of(type_list<Ps...>) noexcept {
  return {priority_name<Ps>()...};
}

template <class... Ps>
constexpr std::size_t count(type_list<Ps...>) noexcept {
  return sizeof...(Ps);
}

// Everything a priority_order computes, outside the class so that it is
// complete where the order's static_asserts use it.
template <class... Relations>
struct order_parts {
  using nodes = typename unique_fold<type_list<>, typename concat<typename relation_parts<Relations>::nodes...>::type>::type;
  using edge_list = typename concat<typename relation_parts<Relations>::edges...>::type;
  static constexpr unsigned size = static_cast<unsigned>(count(nodes{}));
  static constexpr auto edges = edge_array<nodes>(edge_list{});
  static constexpr order_analysis analysis = size <= max_priorities ? analyse_order(size, edges) : order_analysis{};
  static constexpr auto declared_names = names_of(nodes{});
};

template <class Parts, std::size_t... Is>
constexpr bool report_cycle(std::index_sequence<Is...>) noexcept {
  return priority_cycle_error<nth_t<Parts::analysis.cycle[Is], typename Parts::nodes>...>::value;
}

template <class Parts>
constexpr bool require_acyclic() noexcept {
  if constexpr (Parts::analysis.cycle_length == 0)
    return true;
  else
    return report_cycle<Parts>(std::make_index_sequence<Parts::analysis.cycle_length>{});
}

// True, or a compile error naming P and the order if the order lacks P.
template <class Order, class P>
constexpr bool require_priority() noexcept {
  if constexpr (!Order::template contains<P>)
    return priority_not_in_order_error<P, Order>::value;
  else
    return true;
}

template <class R>
inline constexpr bool is_relation = false;
template <class H, class L>
inline constexpr bool is_relation<before<H, L>> = true;
template <class... Ps>
inline constexpr bool is_relation<chain<Ps...>> = true;

}  // namespace detail

// before<...> or chain<...>.
template <class R>
concept priority_relation = detail::is_relation<R>;

template <priority_relation... Relations>
class priority_order {
  using parts = detail::order_parts<Relations...>;

 public:
  // The declared priorities, in order of first mention (a detail::type_list).
  using priorities = typename parts::nodes;
  static constexpr unsigned size = parts::size;

  static_assert(size > 0, "promptly::priority_order: declare at least one priority");
  static_assert(size <= detail::max_priorities,
                "promptly::priority_order: at most 64 priorities (max_levels), one runtime level each");
  static_assert(detail::require_acyclic<parts>(), "promptly::priority_order: the declared relations form a cycle");

  template <class P>
  static constexpr bool contains = detail::index_in<P>(priorities{}) < size;

 private:
  template <class P>
  static constexpr unsigned index() noexcept {
    if constexpr (contains<P>) {
      return detail::index_in<P>(priorities{});
    } else {
      static_assert(priority_not_in_order_error<P, priority_order>::value);
      return 0;
    }
  }

 public:

  // The runtime level tasks of priority P run at (0 = most urgent).
  template <class P>
  static constexpr unsigned level_of = parts::analysis.level[index<P>()];

  // A is at least as urgent as B: A == B, or a chain of declared relations
  // leads from A down to B. Code at B may touch futures at A (rule TOUCH).
  template <class A, class B>
  static constexpr bool at_least_as_urgent = parts::analysis.at_least_as_urgent(index<A>(), index<B>());

  // The priority the linearisation put at `level`.
  template <unsigned Level>
    requires(Level < size)
  using priority_at_level = detail::nth_t<parts::analysis.at_level[Level], priorities>;

  // P's name: P::name if it has one, else the compiler's spelling of P.
  template <class P>
  static constexpr std::string_view name_of = parts::declared_names[index<P>()];

  // The name of the priority at `level`; throws std::out_of_range past size.
  static std::string_view name_of_level(unsigned level) {
    if (level >= size)
      throw std::out_of_range("promptly::priority_order::name_of_level: level " + std::to_string(level) +
                              " is past the order's " + std::to_string(size) + " priorities");
    return parts::declared_names[parts::analysis.at_level[level]];
  }
};

}  // namespace promptly
