// The `aps` policy (I-Cilk, Sec. 3 and 5).
//
// Invariants
//  * desire_[id] is 0 for every pool without ready work at the last decision
//    and for every id not (or no longer) a live pool.
#include "aps.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <vector>

namespace promptly::policy_impl {

desire_result next_desire(bool has_ready_work, double previous_desire, unsigned previous_allotment,
                          double utilization, double delta, double rho) noexcept {
  if (!has_ready_work) return {0.0, desire_rule::no_ready_work};                        // Fig. 1 line 1
  if (previous_desire == 0.0) return {1.0, desire_rule::restart};                        // line 2
  // A pool that got no worker in q-1 ran no steps: nothing says it was
  // inefficient, and it was deprived; keep its desire (line 7).
  if (previous_allotment == 0) return {previous_desire, desire_rule::efficient_deprived};
  // Lines 3-4. Allotments are whole workers (floor of the desire), so a
  // desire below 1 would starve a pool that has work; we keep it >= 1.
  if (utilization < delta) return {std::max(1.0, previous_desire / rho), desire_rule::inefficient};
  // Desires are real numbers; a pool is satisfied when it got all the
  // whole workers its desire asked for.
  if (previous_allotment >= static_cast<unsigned>(std::floor(previous_desire)))
    return {previous_desire * rho, desire_rule::efficient_satisfied};                    // lines 5-6
  return {previous_desire, desire_rule::efficient_deprived};                            // line 7
}

void allot_top_down(std::span<const double> desires, std::span<const ext::pool_view> stats, unsigned workers,
                    std::span<unsigned> allotment) noexcept {
  unsigned left = workers;
  for (std::size_t l = 0; l < desires.size(); ++l) {
    const auto want = static_cast<unsigned>(std::min<double>(std::floor(desires[l]), workers));
    allotment[l] = std::min(want, left);
    left -= allotment[l];
  }
  std::size_t last_with_work = desires.size();
  for (std::size_t l = 0; l < desires.size(); ++l)
    if (stats[l].has_ready_work) last_with_work = l;
  for (std::size_t l = 0; l < desires.size() && left > 0; ++l) {
    if (!stats[l].has_ready_work) continue;
    // The last level with work takes the rest: no worker sleeps while work exists.
    const unsigned extra = l == last_with_work ? left : (left + 1) / 2;
    allotment[l] += extra;
    left -= extra;
  }
}

namespace {

class aps_policy final : public ext::policy {
 public:
  explicit aps_policy(const ext::aps_params& p) : params_(p) {}
  std::string_view name() const noexcept override { return "aps"; }
  double desire(ext::pool_id pool) const noexcept override { return pool < desire_.size() ? desire_[pool] : 0.0; }

  void on_event(const ext::event& ev, ext::decision& d) override {
    const auto pools = d.pools();
    std::uint32_t end = 0;
    for (const ext::pool_view& p : pools) end = std::max(end, p.id + 1);
    if (desire_.size() < end) desire_.resize(end, 0.0);
    if (ev.kind == ext::event_kind::installed) d.set_quantum(params_.quantum);
    if (ev.kind == ext::event_kind::pool_removed && ev.pool < desire_.size()) desire_[ev.pool] = 0.0;
    // Fig. 1 line 1 holds at every decision, not only at quantum ticks: a
    // pool without ready work desires nothing (its desire restarts at 1
    // when work appears), so stale desires never hold cores.
    for (const ext::pool_view& p : pools)
      if (!p.has_ready_work) desire_[p.id] = 0.0;
    if (ev.kind == ext::event_kind::quantum || ev.kind == ext::event_kind::installed) {
      for (const ext::pool_view& p : pools)
        desire_[p.id] =
            next_desire(p.has_ready_work, desire_[p.id], p.cores, p.utilization(), params_.delta, params_.rho).desire;
    } else if (ev.kind == ext::event_kind::became_nonempty || ev.kind == ext::event_kind::pool_added) {
      // Acted on at once (not at the next quantum): the desire restarts at 1.
      if (const ext::pool_view* p = d.find(ev.pool); p != nullptr && p->has_ready_work && desire_[p->id] == 0.0)
        desire_[p->id] = 1.0;
    }
    std::vector<double> desires(pools.size());
    for (std::size_t i = 0; i < pools.size(); ++i) desires[i] = desire_[pools[i].id];
    std::vector<unsigned> allotment(pools.size(), 0);
    allot_top_down(desires, pools, d.core_count(), allotment);
    for (std::size_t i = 0; i < pools.size(); ++i) d.allot(pools[i].id, allotment[i]);
  }

 private:
  ext::aps_params params_;
  std::vector<double> desire_;  // by pool id
};

}  // namespace

std::unique_ptr<ext::policy> make_aps_policy(const ext::aps_params& p) { return std::make_unique<aps_policy>(p); }

}  // namespace promptly::policy_impl
