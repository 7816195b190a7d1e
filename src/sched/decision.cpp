// ext::decision for one policy call, and how its actions become one
// assignment per core (decision.hpp states the invariants).
#include "decision.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace promptly::detail {

decision_impl::decision_impl(std::vector<ext::pool_view> pools, std::vector<ext::core_view> cores,
                             std::chrono::microseconds quantum, bool from_scratch)
    : owned_pools_(std::move(pools)), cores_(std::move(cores)), quantum_(quantum) {
  ext::pool_id end = 0;
  for (const auto& p : owned_pools_) end = std::max(end, p.id + 1);
  id_end_ = end;
  owned_index_.assign(end, static_cast<std::uint32_t>(owned_pools_.size()));
  for (std::size_t i = 0; i < owned_pools_.size(); ++i) {
    owned_index_[owned_pools_[i].id] = static_cast<std::uint32_t>(i);
    if (owned_pools_[i].has_ready_work) with_work_.push_back(owned_pools_[i]);
  }
  pools_ = owned_pools_;
  index_by_id_ = owned_index_;
  start(from_scratch);
}

decision_impl::decision_impl(std::span<const ext::pool_view> pools, std::span<const std::uint32_t> index_by_id,
                             std::vector<ext::pool_view> with_work, std::vector<ext::core_view> cores,
                             std::chrono::microseconds quantum, bool from_scratch)
    : pools_(pools), index_by_id_(index_by_id), with_work_(std::move(with_work)), cores_(std::move(cores)),
      quantum_(quantum) {
  start(from_scratch);
}

void decision_impl::start(bool from_scratch) {
  targets_.assign(cores_.size(), pool_set{});
  explicit_.assign(cores_.size(), false);
  if (from_scratch) return;
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const ext::core_view& v = cores_[c];
    targets_[c] = v.target == ext::core_target::every_pool ? pool_set::every_pool()
                  : v.target == ext::core_target::pool
                      ? (v.pools.empty() ? pool_set::one(v.assigned) : pool_set::ranked(v.pools))
                      : pool_set::none();
  }
}

std::size_t decision_impl::index_of(ext::pool_id id) const noexcept {
  return id < index_by_id_.size() && index_by_id_[id] < pools_.size() ? index_by_id_[id] : pools_.size();
}

const ext::pool_view* decision_impl::find(ext::pool_id id) const noexcept {
  const std::size_t i = index_of(id);
  return i < pools_.size() ? &pools_[i] : nullptr;
}

bool decision_impl::gone(ext::pool_id id, const char* action) const {
  if (index_of(id) != pools_.size()) return false;
  if (id < id_end_) return true;
  throw std::invalid_argument(std::string("promptly: policy ") + action + ": pool " +
                              (id == ext::no_pool ? std::string("no_pool") : std::to_string(id)) + " is not a live pool");
}

void decision_impl::check_core(unsigned core, const char* action) const {
  if (core >= cores_.size())
    throw std::invalid_argument(std::string("promptly: policy ") + action + ": core " + std::to_string(core) +
                                " does not exist (the runtime has " + std::to_string(cores_.size()) + " cores)");
}

void decision_impl::give_core(unsigned core, ext::pool_id pool) {
  check_core(core, "give_core");
  if (gone(pool, "give_core")) return;
  targets_[core] = pool_set::one(pool);
  explicit_[core] = true;
}

void decision_impl::serve(unsigned core, std::span<const ext::pool_id> ranked) {
  check_core(core, "serve");
  if (ranked.empty()) throw std::invalid_argument("promptly: policy serve: core " + std::to_string(core) + " was given no pool (take_core puts a core to sleep)");
  if (ranked.size() > max_ranked_pools)
    throw std::invalid_argument("promptly: policy serve: " + std::to_string(ranked.size()) + " pools for core " +
                                std::to_string(core) + "; a ranked set holds at most " +
                                std::to_string(max_ranked_pools) + " (serve_every_pool serves them all)");
  std::array<ext::pool_id, max_ranked_pools> live{};
  std::size_t kept = 0;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (!gone(ranked[i], "serve")) live[kept++] = ranked[i];
    if (std::find(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(i), ranked[i]) != ranked.begin() + static_cast<std::ptrdiff_t>(i))
      throw std::invalid_argument("promptly: policy serve: pool " + std::to_string(ranked[i]) + " appears twice in core " +
                                  std::to_string(core) + "'s set");
  }
  if (kept == 0) return;  // every pool of the set was removed since
  targets_[core] = pool_set::ranked({live.data(), kept});
  explicit_[core] = true;
}

void decision_impl::take_core(unsigned core) {
  check_core(core, "take_core");
  targets_[core] = pool_set::none();
  explicit_[core] = true;
}

void decision_impl::serve_every_pool(unsigned core) {
  check_core(core, "serve_every_pool");
  targets_[core] = pool_set::every_pool();
  explicit_[core] = true;
}

void decision_impl::allot(ext::pool_id pool, unsigned cores) {
  if (gone(pool, "allot")) return;
  const std::size_t i = index_of(pool);
  counts_[i] = cores;
  counted_ = true;
}

void decision_impl::donate_to(ext::pool_id pool) {
  if (pool != ext::no_pool && gone(pool, "donate_to")) return;
  donation_ = pool;
}

void decision_impl::set_quantum(std::chrono::microseconds q) {
  if (q.count() < 0) throw std::invalid_argument("promptly: policy set_quantum: the quantum must be >= 0");
  quantum_ = std::min(q, ext::max_quantum);  // a longer one overflows the deadline arithmetic (steady_clock's ns)
}

void decision_impl::preempt(ext::pool_id pool) {
  if (gone(pool, "preempt")) return;
  if (std::find(preempted_.begin(), preempted_.end(), pool) == preempted_.end()) preempted_.push_back(pool);
}

std::vector<pool_set> decision_impl::resolve() const {
  std::vector<pool_set> out = targets_;
  // Pools no longer live drop out of the sets; a core whose set empties
  // sleeps (unless counts move it below).
  for (auto& a : out) {
    if (a.what != pool_set::kind::pools) continue;
    std::uint8_t kept = 0;
    for (std::uint8_t i = 0; i < a.count; ++i)
      if (index_of(a.ids[i]) != pools_.size()) a.ids[kept++] = a.ids[i];
    a = kept == 0 ? pool_set::none() : pool_set::ranked({a.ids.data(), kept});
  }
  if (counted_) {
    // Counts to cores, for the cores the policy did not place explicitly:
    // keep each at its assigned pool, then at the pool it serves, while
    // that pool has room; then fill pools most urgent first.
    // The pools named, most urgent first, each with the count of its last allot().
    std::vector<std::pair<std::size_t, long long>> room(counts_.begin(), counts_.end());
    std::sort(room.begin(), room.end());
    auto room_of = [&](std::size_t i) -> long long* {
      const auto it = std::lower_bound(room.begin(), room.end(), i, [](const auto& r, std::size_t x) { return r.first < x; });
      return it != room.end() && it->first == i ? &it->second : nullptr;
    };
    std::vector<bool> placed(out.size(), false);
    for (std::size_t c = 0; c < out.size(); ++c) placed[c] = explicit_[c];
    auto try_place = [&](std::size_t c, ext::pool_id id) {
      long long* left = room_of(index_of(id));
      if (left == nullptr || *left == 0) return false;
      --*left;
      const std::array<ext::pool_id, 2> with_donation{id, donation_};
      out[c] = donation_ == ext::no_pool || donation_ == id ? pool_set::one(id) : pool_set::ranked(with_donation);
      placed[c] = true;
      return true;
    };
    for (std::size_t c = 0; c < out.size(); ++c)
      if (!placed[c] && cores_[c].target == ext::core_target::pool) try_place(c, cores_[c].assigned);
    for (std::size_t c = 0; c < out.size(); ++c)
      if (!placed[c] && cores_[c].serving != ext::no_pool) try_place(c, cores_[c].serving);
    for (std::size_t c = 0; c < out.size(); ++c) {
      if (placed[c]) continue;
      for (std::size_t k = 0; k < room.size() && !placed[c]; ++k) try_place(c, pools_[room[k].first].id);
      if (!placed[c]) out[c] = pool_set::none();
    }
  }
  return out;
}

}  // namespace promptly::detail
