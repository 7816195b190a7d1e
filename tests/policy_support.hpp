// Runs policies outside a runtime, through the runtime's own decision object
// (src/sched/decision.hpp): the tests see exactly how actions become
// per-core assignments.
#pragma once

#include <chrono>
#include <initializer_list>
#include <utility>
#include <vector>

#include "promptly/ext/policy.hpp"
#include "sched/decision.hpp"

namespace policy_support {

namespace ext = promptly::ext;

// Pools in rank order, ids = positions, with or without ready work.
inline std::vector<ext::pool_view> pools_with(std::initializer_list<bool> ready) {
  std::vector<ext::pool_view> v;
  for (bool r : ready) {
    ext::pool_view p;
    p.id = static_cast<ext::pool_id>(v.size());
    p.rank = p.id;
    p.has_ready_work = r;
    v.push_back(p);
  }
  return v;
}

// Pools by (rank, has ready work), ids = positions (list order = rank, then age).
inline std::vector<ext::pool_view> pools_of(std::initializer_list<std::pair<unsigned, bool>> spec) {
  std::vector<ext::pool_view> v;
  for (auto [rank, ready] : spec) {
    ext::pool_view p;
    p.id = static_cast<ext::pool_id>(v.size());
    p.rank = rank;
    p.has_ready_work = ready;
    v.push_back(p);
  }
  return v;
}

// A policy's view of `cores` cores that remember where the last decision put them.
class decisions {
 public:
  explicit decisions(unsigned cores) : targets_(cores), held_by_(cores, ext::no_pool) {}

  // Core c's view serves `pool` whatever its assignment (a strand of that
  // pool holds it) until released with ext::no_pool.
  void hold(unsigned c, ext::pool_id pool) { held_by_.at(c) = pool; }

  // Cores per pool (by position in `pools`) after the policy handled `ev`.
  std::vector<unsigned> decide(ext::policy& p, ext::event_kind kind, ext::pool_id pool,
                               std::vector<ext::pool_view> pools) {
    for (std::size_t i = 0; i < pools.size(); ++i)
      if (pools[i].id == ext::no_pool) pools[i].id = static_cast<ext::pool_id>(i);
    std::vector<ext::core_view> cores(targets_.size());
    for (std::size_t c = 0; c < cores.size(); ++c) {
      cores[c].index = static_cast<unsigned>(c);
      cores[c].target = targets_[c].target();
      cores[c].assigned = targets_[c].first();
      cores[c].pools.assign(targets_[c].ranked_ids().begin(), targets_[c].ranked_ids().end());
      cores[c].serving = held_by_[c] != ext::no_pool ? held_by_[c] : cores[c].assigned;
    }
    promptly::detail::decision_impl d(pools, cores, quantum_, kind == ext::event_kind::installed);
    p.on_event(ext::event{kind, pool, {}}, d);
    targets_ = d.resolve();
    quantum_ = d.quantum();
    std::vector<unsigned> per_pool(pools.size(), 0);
    for (const auto& t : targets_)
      for (std::size_t i = 0; i < pools.size(); ++i)
        if (pools[i].id == serves(t, pools)) ++per_pool[i];
    return per_pool;
  }

  // The pool a core with set `t` works at, as the runtime's walk of a
  // ranked set picks it: its most urgent pool with ready work, else its
  // most urgent pool (no_pool: asleep or every pool).
  static ext::pool_id serves(const promptly::detail::pool_set& t, const std::vector<ext::pool_view>& pools) {
    for (const auto id : t.ranked_ids())
      for (const auto& p : pools)
        if (p.id == id && p.has_ready_work) return id;
    return t.first();
  }

  // As decide(), but each pool's `cores` is what the previous decision gave
  // it, as the runtime's view reports (pool_view::cores): for policies
  // whose rules read p_{q-1}, such as aps.
  std::vector<unsigned> decide_with_cores(ext::policy& p, ext::event_kind kind, ext::pool_id pool,
                                          std::vector<ext::pool_view> pools) {
    for (std::size_t i = 0; i < pools.size(); ++i) {
      if (pools[i].id == ext::no_pool) pools[i].id = static_cast<ext::pool_id>(i);
      pools[i].cores = 0;
      for (const auto& t : targets_)
        if (t.first() == pools[i].id) ++pools[i].cores;
    }
    return decide(p, kind, pool, std::move(pools));
  }

  // Cores the last decision left asleep.
  unsigned asleep() const {
    unsigned n = 0;
    for (const auto& t : targets_) n += t.asleep() ? 1 : 0;
    return n;
  }

  bool all_serve_every_pool() const {
    for (const auto& t : targets_)
      if (!t.every()) return false;
    return !targets_.empty();
  }
  // Core c's assignment after the last decision.
  const promptly::detail::pool_set& of(unsigned c) const { return targets_.at(c); }
  std::chrono::microseconds quantum() const { return quantum_; }

 private:
  std::vector<promptly::detail::pool_set> targets_;
  std::vector<ext::pool_id> held_by_;  // by core: the pool whose strand holds it, or no_pool
  std::chrono::microseconds quantum_{0};
};

}  // namespace policy_support
