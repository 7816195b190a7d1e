// Fairness criteria by typed priority: the weights of the `fair` policy
// ("Fairness in Responsive Parallelism", ICFP 2019, Sec. 4, installDist of
// Fig. 6) given to priority types instead of level numbers.
//
//   namespace pt = promptly::typed;
//   constexpr pt::fair_criterion<order> crit{pt::weight<ui>(50), pt::weight<fetch>(25), pt::weight<batch>(25)};
//   cfg.fair.weights = crit.weights();   // runtime_config: one weight per level
//   pt::set_fairness(rt, crit);          // or while the runtime runs
//
// A priority's weight goes to the level the typed layer runs its tasks at,
// Order::level_of<P> (the linearisation of priority_order.hpp), so the
// criterion follows the order whatever the declaration order of the
// priorities. Priorities the criterion does not name weigh 0, like the
// levels past the end of a weight list (docs/fairness.md): they get only
// the cycles other levels donate.
//
// Checked at compile time: every named priority is in the order
// (priority_not_in_order_error<P, Order>, the touch check's diagnostic), no
// priority is named twice (priority_weighted_twice_error<P>), and at least
// one is named. Checked when the weights are known: a negative weight or
// every weight 0 throws std::invalid_argument naming the priorities; in a
// constant expression (a constexpr criterion) the same check is a compile
// error, "call to non-'constexpr' function ... fair_weight_is_negative" or
// "... every_fair_weight_is_zero".
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "promptly/runtime.hpp"
#include "promptly/typed/fcreate.hpp"
#include "promptly/typed/priority_order.hpp"
#include "promptly/typed/type_name.hpp"

namespace promptly::typed {

// Instantiated when a fair_criterion names a priority twice.
template <class Priority>
struct priority_weighted_twice_error {
  static_assert(sizeof(Priority) == 0,
                "promptly::typed::fair_criterion: this priority (the template argument of "
                "priority_weighted_twice_error<...>) is given a weight twice; give each priority at most one "
                "promptly::typed::weight<P>(w)");
  static constexpr bool value = true;
};

namespace detail {

// Not constexpr on purpose: reached in a constant expression, the call is
// the compile error, and its name says what is wrong.
[[noreturn]] inline void fair_weight_is_negative(std::string_view priority, long long w) {
  throw std::invalid_argument("promptly::typed::fair_criterion: the weight of priority '" + std::string(priority) +
                              "' is " + std::to_string(w) + "; weights must be >= 0");
}

[[noreturn]] inline void every_fair_weight_is_zero(std::initializer_list<std::string_view> priorities) {
  std::string names;
  for (std::string_view p : priorities) names += (names.empty() ? "" : ", ") + std::string(p);
  throw std::invalid_argument("promptly::typed::fair_criterion: every weight is 0 (" + names +
                              "); give at least one priority a positive weight");
}

// True, or a compile error naming P if Ps names it more than once.
template <class P, class... Ps>
constexpr bool require_weighted_once() noexcept {
  if constexpr ((std::size_t{std::is_same_v<P, Ps>} + ...) > 1)
    return priority_weighted_twice_error<P>::value;
  else
    return true;
}

// Every named priority is in Order, and named once.
template <class Order, class... Ps>
constexpr bool require_criterion_priorities() noexcept {
  return (promptly::detail::require_priority<Order, Ps>() && ...) && (require_weighted_once<Ps, Ps...>() && ...);
}

}  // namespace detail

// The weight of priority P in a fairness criterion; >= 0.
template <class P>
class fair_weight {
 public:
  using priority = P;
  constexpr explicit fair_weight(long long w) : value_(w) {
    if (w < 0) detail::fair_weight_is_negative(promptly::detail::priority_name<P>(), w);
  }
  [[nodiscard]] constexpr long long value() const noexcept { return value_; }

 private:
  long long value_;
};

// weight<P>(w): P's weight in a fair_criterion; throws std::invalid_argument
// (a compile error in a constant expression) for w < 0.
template <class P>
[[nodiscard]] constexpr fair_weight<P> weight(long long w) {
  return fair_weight<P>(w);
}

// A fairness criterion over the priorities of Order: one weight per
// priority, stored by level (0 = most urgent), as runtime_config::fair.weights
// and runtime::set_fairness take it.
template <class Order>
class fair_criterion {
 public:
  using order = Order;

  template <class... Ps>
  constexpr explicit fair_criterion(fair_weight<Ps>... ws) {
    static_assert(sizeof...(Ps) > 0,
                  "promptly::typed::fair_criterion: name at least one priority, e.g. "
                  "fair_criterion<order>{promptly::typed::weight<ui>(1)}");
    static_assert(detail::require_criterion_priorities<Order, Ps...>());
    ((weights_[Order::template level_of<Ps>] = ws.value()), ...);
    if (((ws.value() == 0) && ...)) detail::every_fair_weight_is_zero({Order::template name_of<Ps>...});
  }

  // The weights by level, Order::size of them (the runtime's levels past
  // them weigh 0): runtime_config::fair.weights = crit.weights().
  [[nodiscard]] std::vector<long long> weights() const { return {weights_.begin(), weights_.end()}; }

  // P's weight; 0 if the criterion does not name it.
  template <class P>
  [[nodiscard]] constexpr long long weight_of() const noexcept {
    static_assert(promptly::detail::require_priority<Order, P>());
    return weights_[Order::template level_of<P>];
  }

  // F(P): P's weight over the sum, the share the `fair` policy promises P's
  // level (pool_stats::share under that policy).
  template <class P>
  [[nodiscard]] constexpr double share_of() const noexcept {
    long double sum = 0;  // long double as the runtime's fair_shares: no overflow for any weights
    for (long long w : weights_) sum += static_cast<long double>(w);
    return static_cast<double>(static_cast<long double>(weight_of<P>()) / sum);
  }

 private:
  std::array<long long, Order::size> weights_{};
};

// Installs `crit` in `rt` (runtime::set_fairness): at once under the `fair`
// policy, else when `fair` is selected. Throws std::out_of_range, as
// typed::run does, when the runtime has fewer levels than Order has
// priorities; the previous criterion then stays.
template <class Order>
void set_fairness(runtime& rt, const fair_criterion<Order>& crit) {
  detail::require_levels<Order>(rt);
  rt.set_fairness(crit.weights());
}

}  // namespace promptly::typed
