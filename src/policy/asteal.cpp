// The `asteal` policy: adaptive work stealing with parallelism feedback
// (A-STEAL: Agrawal, He, Hsu and Leiserson, "Adaptive work-stealing with
// parallelism feedback", TOCS 2008; AMCilk Sec. 6.3, PARALLELISM_FB).
//
// Every quantum (default 2 ms) each pool with work gets a new desire from
// how it used its cores in the quantum that ended (asteal_next_desire in
// job_policies.hpp): utilisation = CPU time spent working / (work + look)
// wall time of its cores, the runtime's measure of A-STEAL's "non-steal
// usage" (utilization() below); a pool below delta
// halves its desire, an efficient pool that got its desire doubles it, an
// efficient deprived one keeps it. A pool that gets work starts at
// desire 1 (A-STEAL's d_1 = 1); one without work desires nothing.
//
// Allotment: dynamic equipartitioning of the desires (deq in
// job_classes.hpp) within each class, most urgent class first. Cores no
// pool desires (every desire met) are surplus: they are split evenly over
// all pools with work, oldest first, so no core sleeps while a pool has
// work (a surplus core's look time lowers its pool's utilisation, which
// lowers the desire: the feedback still converges to the parallelism).
// With asteal_params::share_surplus = false they sleep instead, as A-STEAL's
// analysis assumes (no job is allotted more than it desires).
// Pool events (added, removed, non-empty, empty) reallocate at once with
// the current desires; only quantum ticks change desires.
//
// Invariants
//  * desire_[id] is 0 for every pool without ready work at the last
//    decision and for ids that are not live pools; otherwise in
//    [1, core count].
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "job_classes.hpp"
#include "job_policies.hpp"

namespace promptly::policy_impl {

asteal_desire asteal_next_desire(double desire, unsigned allotted, double utilization, double delta, double rho,
                                 double max_desire) noexcept {
  const double top = std::max(1.0, max_desire);
  if (allotted == 0) return {desire, asteal_rule::no_cores};
  if (utilization < delta) return {std::clamp(desire / rho, 1.0, top), asteal_rule::inefficient};
  // Desires are real numbers and allotments whole cores: satisfied means it
  // got every whole core its desire asked for.
  if (allotted >= static_cast<unsigned>(std::floor(desire)))
    return {std::clamp(desire * rho, 1.0, top), asteal_rule::efficient_satisfied};
  return {desire, asteal_rule::efficient_deprived};
}

namespace {

// A-STEAL's utilisation counts the steps the job's processors ran its work
// against the steps its allotment offered (Agrawal et al., Sec. 3). A core
// the OS preempted ran nothing, yet by the wall clock it was working: with
// CPU time (measured at ticks) a pool whose cores other processes take
// looks less efficient and asks for fewer cores instead of more. Without a
// CPU measure (no core was placed at the pool) the wall-clock ratio stands.
double utilization(const ext::pool_view& p) noexcept {
  const double wall = p.work_s + p.look_s;
  if (p.cpu_s <= 0 || wall <= 0) return p.utilization();
  return std::min(1.0, p.cpu_s / wall);
}

class asteal_policy final : public ext::policy {
 public:
  explicit asteal_policy(const asteal_params& p) : params_(p) {}
  std::string_view name() const noexcept override { return "asteal"; }
  double desire(ext::pool_id pool) const noexcept override { return pool < desire_.size() ? desire_[pool] : 0.0; }

  void on_event(const ext::event& ev, ext::decision& d) override {
    const auto pools = d.pools_with_work();  // a pool without work has no desire and gets no core
    const unsigned cores = d.core_count();
    if (ev.kind == ext::event_kind::installed) d.set_quantum(params_.quantum);
    std::uint32_t end = 0;
    for (const ext::pool_view& p : pools) end = std::max(end, p.id + 1);
    // Ids of removed pools may be taken again: forget everything not live.
    std::vector<double> live(end, 0.0);
    for (const ext::pool_view& p : pools)
      if (p.id < desire_.size() && p.has_ready_work) live[p.id] = desire_[p.id];
    desire_ = std::move(live);

    for (const ext::pool_view& p : pools) {
      if (!p.has_ready_work) continue;
      double& dsr = desire_[p.id];
      if (dsr == 0.0) {
        dsr = 1.0;  // arrival: A-STEAL starts every job at desire 1
      } else if (ev.kind == ext::event_kind::quantum) {
        dsr = asteal_next_desire(dsr, p.cores, utilization(p), params_.delta, params_.rho, cores).desire;
      }
    }

    std::vector<unsigned> counts = serve_by_rank(pools, cores, [&](std::span<const std::size_t> members, unsigned left) {
      std::vector<unsigned> want(members.size());
      for (std::size_t k = 0; k < members.size(); ++k)
        want[k] = std::max(1u, static_cast<unsigned>(std::floor(desire_[pools[members[k]].id])));
      return deq(want, left);
    });
    unsigned used = 0;
    for (unsigned c : counts) used += c;
    std::vector<std::size_t> busy;
    for (std::size_t i = 0; i < pools.size(); ++i)
      if (pools[i].has_ready_work) busy.push_back(i);
    const std::vector<unsigned> surplus = equal_split(busy.size(), params_.share_surplus ? cores - used : 0);
    for (std::size_t k = 0; k < busy.size(); ++k) counts[busy[k]] += surplus[k];
    allot_counts(d, pools, counts);
  }

 private:
  asteal_params params_;
  std::vector<double> desire_;  // by pool id
};

}  // namespace

std::unique_ptr<ext::policy> make_asteal_policy(const asteal_params& p) {
  if (!(p.delta > 0 && p.delta <= 1))
    throw std::invalid_argument("promptly: asteal delta = " + std::to_string(p.delta) + " must be in (0, 1]");
  if (!(p.rho > 1)) throw std::invalid_argument("promptly: asteal rho = " + std::to_string(p.rho) + " must be > 1");
  if (p.quantum.count() <= 0) throw std::invalid_argument("promptly: asteal quantum must be > 0");
  return std::make_unique<asteal_policy>(p);
}

}  // namespace promptly::policy_impl
