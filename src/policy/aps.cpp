// The `aps` policy (seed 000 Sec. 3 and 5).
#include "aps.hpp"

#include <algorithm>
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

void allot_top_down(std::span<const double> desires, std::span<const ext::pool_stats> stats, unsigned workers,
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
  aps_policy(std::size_t pools, const ext::aps_params& p) : params_(p), desire_(pools, 0.0) {}
  std::string_view name() const noexcept override { return "aps"; }
  std::chrono::microseconds quantum() const noexcept override { return params_.quantum; }
  double desire(std::size_t pool) const noexcept override { return desire_[pool]; }

  void decide(ext::pool_event ev, std::size_t pool, std::span<const ext::pool_stats> stats, unsigned workers,
              std::span<unsigned> allotment) override {
    // Fig. 1 line 1 holds at every decision, not only at quantum ticks: a
    // level without ready work desires nothing (its desire restarts at 1
    // when work appears), so stale desires never hold workers.
    for (std::size_t l = 0; l < stats.size(); ++l)
      if (!stats[l].has_ready_work) desire_[l] = 0.0;
    if (ev == ext::pool_event::quantum) {
      for (std::size_t l = 0; l < stats.size(); ++l)
        desire_[l] = next_desire(stats[l].has_ready_work, desire_[l], stats[l].allotted, stats[l].utilization(),
                                 params_.delta, params_.rho)
                         .desire;
    } else if (ev == ext::pool_event::became_nonempty) {
      // Acted on at once (not at the next quantum): the desire restarts at 1.
      if (pool < stats.size() && stats[pool].has_ready_work && desire_[pool] == 0.0) desire_[pool] = 1.0;
    }
    allot_top_down(desire_, stats, workers, allotment);
  }

 private:
  ext::aps_params params_;
  std::vector<double> desire_;
};

}  // namespace

std::unique_ptr<ext::policy> make_aps_policy(std::size_t pools, const ext::aps_params& p) {
  return std::make_unique<aps_policy>(pools, p);
}

}  // namespace promptly::policy_impl
