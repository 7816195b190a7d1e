// ext::decision for one policy call, and how its actions become one
// assignment per core (decision.hpp states the invariants).
#include "decision.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace promptly::detail {

decision_impl::decision_impl(std::vector<ext::pool_view> pools, std::vector<ext::core_view> cores,
                             std::chrono::microseconds quantum, bool from_scratch)
    : pools_(std::move(pools)),
      cores_(std::move(cores)),
      targets_(cores_.size()),
      explicit_(cores_.size(), false),
      counts_(pools_.size(), -1),
      quantum_(quantum) {
  ext::pool_id end = 0;
  for (const auto& p : pools_) end = std::max(end, p.id + 1);
  index_by_id_.assign(end, pools_.size());
  for (std::size_t i = 0; i < pools_.size(); ++i) index_by_id_[pools_[i].id] = i;
  if (from_scratch) return;
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    targets_[c].target = cores_[c].target;
    targets_[c].pool = cores_[c].assigned;
  }
}

std::size_t decision_impl::index_of(ext::pool_id id) const noexcept {
  return id < index_by_id_.size() ? index_by_id_[id] : pools_.size();
}

const ext::pool_view* decision_impl::find(ext::pool_id id) const noexcept {
  const std::size_t i = index_of(id);
  return i < pools_.size() ? &pools_[i] : nullptr;
}

void decision_impl::check_core(unsigned core, const char* action) const {
  if (core >= cores_.size())
    throw std::invalid_argument(std::string("promptly: policy ") + action + ": core " + std::to_string(core) +
                                " does not exist (the runtime has " + std::to_string(cores_.size()) + " cores)");
}

void decision_impl::give_core(unsigned core, ext::pool_id pool) {
  check_core(core, "give_core");
  if (index_of(pool) == pools_.size())
    throw std::invalid_argument("promptly: policy give_core: pool " + std::to_string(pool) + " is not a live pool");
  targets_[core] = {ext::core_target::pool, pool};
  explicit_[core] = true;
}

void decision_impl::take_core(unsigned core) {
  check_core(core, "take_core");
  targets_[core] = {ext::core_target::asleep, 0};
  explicit_[core] = true;
}

void decision_impl::roam(unsigned core) {
  check_core(core, "roam");
  targets_[core] = {ext::core_target::roaming, 0};
  explicit_[core] = true;
}

void decision_impl::allot(ext::pool_id pool, unsigned cores) {
  const std::size_t i = index_of(pool);
  if (i == pools_.size())
    throw std::invalid_argument("promptly: policy allot: pool " + std::to_string(pool) + " is not a live pool");
  counts_[i] = cores;
  counted_ = true;
}

void decision_impl::set_quantum(std::chrono::microseconds q) {
  if (q.count() < 0) throw std::invalid_argument("promptly: policy set_quantum: the quantum must be >= 0");
  quantum_ = q;
}

std::vector<core_assignment> decision_impl::resolve() const {
  std::vector<core_assignment> out = targets_;
  // A core left at a pool that is no longer live sleeps (unless counts move it below).
  for (auto& a : out)
    if (a.target == ext::core_target::pool && index_of(a.pool) == pools_.size()) a = {ext::core_target::asleep, 0};
  if (counted_) {
    // Counts to cores, for the cores the policy did not place explicitly:
    // keep each at its assigned pool, then at the pool it serves, while
    // that pool has room; then fill pools most urgent first.
    std::vector<long long> room(pools_.size(), 0);
    for (std::size_t i = 0; i < pools_.size(); ++i) room[i] = counts_[i] < 0 ? 0 : counts_[i];
    std::vector<bool> placed(out.size(), false);
    for (std::size_t c = 0; c < out.size(); ++c) placed[c] = explicit_[c];
    auto try_place = [&](std::size_t c, ext::pool_id id) {
      const std::size_t i = index_of(id);
      if (i == pools_.size() || room[i] == 0) return false;
      --room[i];
      out[c] = {ext::core_target::pool, id};
      placed[c] = true;
      return true;
    };
    for (std::size_t c = 0; c < out.size(); ++c)
      if (!placed[c] && cores_[c].target == ext::core_target::pool) try_place(c, cores_[c].assigned);
    for (std::size_t c = 0; c < out.size(); ++c)
      if (!placed[c] && cores_[c].serving != ext::no_pool) try_place(c, cores_[c].serving);
    for (std::size_t c = 0; c < out.size(); ++c) {
      if (placed[c]) continue;
      for (std::size_t i = 0; i < pools_.size() && !placed[c]; ++i) try_place(c, pools_[i].id);
      if (!placed[c]) out[c] = {ext::core_target::asleep, 0};
    }
  }
  std::size_t roaming = 0;
  for (auto& a : out) roaming += a.target == ext::core_target::roaming ? 1 : 0;
  if (roaming != 0 && roaming != out.size())
    throw std::logic_error("promptly: the policy left " + std::to_string(roaming) + " of " +
                           std::to_string(out.size()) + " cores roaming; either every core roams or none does");
  return out;
}

}  // namespace promptly::detail
