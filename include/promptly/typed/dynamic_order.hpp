// The dynamic priority API: priorities as run-time values (for example read
// from a configuration file), with rule TOUCH checked at run time
// ("Fairness in Responsive Parallelism", ICFP 2019, Sec. 5.3: "if blocking
// on t would create a priority inversion, it raises the exception
// IncompatiblePriorities").
//
//   auto order = promptly::dynamic_priority_order::parse("ui > fetch > batch; ui > log > batch");
//   promptly::dynamic_priority ui = order["ui"], log = order["log"];
//   order.run(rt, ui, [&] {
//     auto f = order.fcreate(log, [] { return 1; });   // dynamic_future<int>
//     return f.get();   // throws promptly::priority_inversion: 'log' is not at least as urgent as 'ui'
//   });
//
// The order is linearised into levels 0..size()-1 exactly like a
// priority_order (order_analysis.hpp, the same algorithm), and a task of
// priority p runs at level p.level(). The priority of the code that touches
// is the priority at its level (current()): a touch from a worker at level
// L < size() of a future of priority q throws priority_inversion unless q
// is at least as urgent as at_level(L). Code at a level >= size() is less
// urgent than every priority of the order, and a thread that is no worker
// has no priority; their touches are not checked.
//
// Invariants
//  * A dynamic_priority_order is immutable after construction; copies and
//    the dynamic_priority values taken from it share its data, which lives
//    as long as any of them (so reads need no synchronisation).
//  * The relations are acyclic and name only declared priorities, and
//    size() <= max_levels; the constructor throws std::invalid_argument
//    otherwise, naming the offending priorities.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "promptly/errors.hpp"
#include "promptly/future.hpp"
#include "promptly/this_task.hpp"
#include "promptly/runtime.hpp"
#include "promptly/typed/order_analysis.hpp"

namespace promptly {

namespace detail {
struct dynamic_order_data {
  std::vector<std::string> names;  // in declaration order
  order_analysis analysis;
};
}  // namespace detail

// One priority of a dynamic_priority_order.
class dynamic_priority {
 public:
  [[nodiscard]] const std::string& name() const noexcept { return order_->names[index_]; }
  // The runtime level its tasks run at.
  [[nodiscard]] unsigned level() const noexcept { return order_->analysis.level[index_]; }
  // Code at `other` may touch futures of *this (rule TOUCH). Both must come
  // from the same order (else std::invalid_argument).
  [[nodiscard]] bool at_least_as_urgent_as(const dynamic_priority& other) const {
    if (order_ != other.order_)
      throw std::invalid_argument("promptly::dynamic_priority: '" + name() + "' and '" + other.name() +
                                  "' belong to different orders");
    return order_->analysis.at_least_as_urgent(index_, other.index_);
  }
  friend bool operator==(const dynamic_priority& a, const dynamic_priority& b) noexcept {
    return a.order_ == b.order_ && a.index_ == b.index_;
  }

 private:
  friend class dynamic_priority_order;
  template <class T>
  friend class dynamic_future;
  dynamic_priority(std::shared_ptr<const detail::dynamic_order_data> o, unsigned i) noexcept
      : order_(std::move(o)), index_(i) {}
  std::shared_ptr<const detail::dynamic_order_data> order_;
  unsigned index_;
};

// A future of a task created at a dynamic priority.
template <class T>
class dynamic_future {
 public:
  using value_type = T;

  [[nodiscard]] const dynamic_priority& priority() const noexcept { return p_; }
  [[nodiscard]] bool valid() const noexcept { return f_.valid(); }
  [[nodiscard]] bool is_ready() const noexcept { return f_.is_ready(); }

  // Checks rule TOUCH against the calling task's priority (throws
  // promptly::priority_inversion), then waits and returns the value or
  // rethrows the task's exception, like promptly::future<T>.
  const detail::stored_t<T>& get() const& {
    check_touch();
    return f_.get();
  }
  T get() && {
    check_touch();
    return std::move(f_).get();
  }
  void wait() const {
    check_touch();
    f_.wait();
  }

  // The untyped handle; touching it is not checked.
  [[nodiscard]] const promptly::future<T>& untyped() const& noexcept { return f_; }

 private:
  friend class dynamic_priority_order;
  dynamic_future(dynamic_priority p, promptly::future<T> f) noexcept : p_(std::move(p)), f_(std::move(f)) {}
  void check_touch() const;

  dynamic_priority p_;
  promptly::future<T> f_;
};

class dynamic_priority_order {
 public:
  // `names` declares priorities in order; `relations` are (more urgent, less
  // urgent) pairs of declared names. Throws std::invalid_argument for an
  // empty or repeated name, a relation naming an undeclared priority, more
  // than max_levels priorities, or a cycle (the message lists it).
  dynamic_priority_order(std::vector<std::string> names, const std::vector<std::pair<std::string, std::string>>& relations)
      : data_(build(std::move(names), relations)) {}

  // Parses chains "a > b > c" separated by ';', ',' or newlines; a chain of
  // one name declares an unrelated priority. Names are declared in order of
  // first mention. Throws std::invalid_argument like the constructor, and
  // for an empty name.
  static dynamic_priority_order parse(std::string_view spec) {
    std::vector<std::string> names;
    std::vector<std::pair<std::string, std::string>> relations;
    std::size_t chain_start = 0;
    while (chain_start <= spec.size()) {
      std::size_t chain_end = spec.find_first_of(";,\n", chain_start);
      if (chain_end == std::string_view::npos) chain_end = spec.size();
      const std::string_view chain = spec.substr(chain_start, chain_end - chain_start);
      if (chain.find_first_not_of(" \t\r") != std::string_view::npos) {
        std::string previous;
        std::size_t name_start = 0;
        while (name_start <= chain.size()) {
          std::size_t name_end = chain.find('>', name_start);
          if (name_end == std::string_view::npos) name_end = chain.size();
          std::string name = trim(chain.substr(name_start, name_end - name_start));
          if (name.empty())
            throw std::invalid_argument("promptly::dynamic_priority_order::parse: empty priority name in \"" +
                                        std::string(chain) + "\"");
          if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
          if (!previous.empty()) relations.emplace_back(previous, name);
          previous = std::move(name);
          name_start = name_end + 1;
        }
      }
      chain_start = chain_end + 1;
    }
    return dynamic_priority_order(std::move(names), relations);
  }

  [[nodiscard]] unsigned size() const noexcept { return data_->analysis.size; }

  // The priority called `name`; throws std::invalid_argument naming it.
  [[nodiscard]] dynamic_priority operator[](std::string_view name) const {
    const auto& names = data_->names;
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw std::invalid_argument("promptly::dynamic_priority_order: no priority named '" + std::string(name) + "'");
    return dynamic_priority(data_, static_cast<unsigned>(it - names.begin()));
  }

  // The priority the linearisation put at `level`; throws std::out_of_range.
  [[nodiscard]] dynamic_priority at_level(unsigned level) const {
    if (level >= size())
      throw std::out_of_range("promptly::dynamic_priority_order: level " + std::to_string(level) + " is past its " +
                              std::to_string(size()) + " priorities");
    return dynamic_priority(data_, data_->analysis.at_level[level]);
  }

  // The priority of the calling task: the one at its level. Empty outside a
  // runtime's workers and at levels past size().
  [[nodiscard]] std::optional<dynamic_priority> current() const {
    if (detail::current_worker() == nullptr) return std::nullopt;
    const unsigned l = current_level();
    if (l >= size()) return std::nullopt;
    return at_level(l);
  }

  // Runs f as a task at priority p (from a task; promptly::async's rules).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] auto fcreate(const dynamic_priority& p, F&& f) const -> dynamic_future<std::invoke_result_t<std::decay_t<F>&>> {
    require_mine(p);
    return {p, promptly::async(level{p.level()}, std::forward<F>(f))};
  }

  // From outside the runtime (rt.run / rt.submit at p's level). Throw
  // std::out_of_range if the runtime has fewer than size() levels.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  auto run(runtime& rt, const dynamic_priority& p, F&& f) const -> std::invoke_result_t<std::decay_t<F>&> {
    require_mine(p);
    require_levels(rt);
    return rt.run(level{p.level()}, std::forward<F>(f));
  }
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] auto submit(runtime& rt, const dynamic_priority& p, F&& f) const -> dynamic_future<std::invoke_result_t<std::decay_t<F>&>> {
    require_mine(p);
    require_levels(rt);
    return {p, rt.submit(level{p.level()}, std::forward<F>(f))};
  }

 private:
  static std::string trim(std::string_view s) {
    const std::size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const std::size_t e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
  }

  static std::shared_ptr<const detail::dynamic_order_data> build(
      std::vector<std::string> names, const std::vector<std::pair<std::string, std::string>>& relations) {
    const char* what = "promptly::dynamic_priority_order: ";
    if (names.empty()) throw std::invalid_argument(std::string(what) + "declare at least one priority");
    if (names.size() > detail::max_priorities)
      throw std::invalid_argument(std::string(what) + std::to_string(names.size()) +
                                  " priorities; at most 64 (max_levels), one runtime level each");
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty()) throw std::invalid_argument(std::string(what) + "empty priority name");
      if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
          names.begin() + static_cast<std::ptrdiff_t>(i))
        throw std::invalid_argument(std::string(what) + "priority '" + names[i] + "' declared twice");
    }
    auto index_of = [&](const std::string& name) {
      const auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end())
        throw std::invalid_argument(std::string(what) + "a relation names '" + name +
                                    "', which is not a declared priority");
      return static_cast<unsigned>(it - names.begin());
    };
    std::vector<detail::priority_edge> edges;
    edges.reserve(relations.size());
    for (const auto& [higher, lower] : relations) edges.emplace_back(index_of(higher), index_of(lower));
    auto data = std::make_shared<detail::dynamic_order_data>();
    data->analysis = detail::analyse_order(static_cast<unsigned>(names.size()), edges);
    if (const auto& a = data->analysis; a.cycle_length != 0) {
      std::string cycle;
      for (unsigned i = 0; i < a.cycle_length; ++i) cycle += names[a.cycle[i]] + " > ";
      cycle += names[a.cycle[0]];
      throw std::invalid_argument(std::string(what) + "the relations form a cycle: " + cycle);
    }
    data->names = std::move(names);
    return data;
  }

  void require_mine(const dynamic_priority& p) const {
    if (p.order_.get() != data_.get())
      throw std::invalid_argument("promptly::dynamic_priority_order: priority '" + p.name() +
                                  "' belongs to another order");
  }
  void require_levels(const runtime& rt) const {
    if (size() > rt.config().levels)
      throw std::out_of_range("promptly::dynamic_priority_order: the order has " + std::to_string(size()) +
                              " priorities but the runtime has " + std::to_string(rt.config().levels) +
                              " levels; raise runtime_config::levels");
  }

  std::shared_ptr<const detail::dynamic_order_data> data_;
};

template <class T>
void dynamic_future<T>::check_touch() const {
  if (!f_.valid()) return;  // f_.get() throws future_empty
  if (detail::current_worker() == nullptr) return;
  const auto& a = p_.order_->analysis;
  const unsigned toucher_level = current_level();
  if (toucher_level >= a.size) return;
  const unsigned toucher = a.at_level[toucher_level];
  if (!a.at_least_as_urgent(p_.index_, toucher)) throw priority_inversion(p_.name(), p_.order_->names[toucher]);
}

}  // namespace promptly
