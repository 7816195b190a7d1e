// The `aps` policy (I-Cilk, Sec. 3 and 5), in Promptly's variant or the
// paper's rule exactly (aps_params::exact; aps.hpp states both).
//
// Invariants
//  * Variant: desiring_ holds every id whose desire_ or stall_floor_ is not 0.
//  * Variant: desire_[id] and stall_floor_[id] are 0 for every pool without
//    ready work at the last decision and for every id not (or no longer) a
//    live pool; stall_floor_ changes only at quantum ticks otherwise, and is
//    0 wherever desire_ is. Exact: stall_floor_ is 0 everywhere.
//  * Variant: the backlog floor is computed afresh at every decision and
//    kept nowhere; it raises at most one pool's desire, the most urgent
//    pool with queued work, and never changes desire_.
//  * Exact: desire_ changes only at quantum ticks and installation (Fig. 1
//    runs once per quantum), and is 0 for every id not (or no longer) a live
//    pool. The allotment changes only at quantum ticks and installation
//    (Sec. 3: "This allocation does not change for the duration of the
//    quantum"); other events leave every core where it is, except the cores
//    of a removed pool, which sleep until the next quantum.
#include "aps.hpp"
#include "job_classes.hpp"

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

double stall_floor(bool stalled, unsigned previous_allotment) noexcept {
  return stalled && previous_allotment > 0 ? previous_allotment + 1.0 : 0.0;
}

double backlog_floor(std::size_t queued, unsigned cores) noexcept { return queued > 0 && cores > 0 ? cores + 1.0 : 0.0; }

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

desire_result next_desire_exact(bool has_ready_work, double previous_desire, unsigned previous_allotment,
                                double utilization, double delta, double rho) noexcept {
  if (!has_ready_work) return {0.0, desire_rule::no_ready_work};  // Fig. 1 line 1
  if (previous_desire == 0.0) return {1.0, desire_rule::restart};   // line 2
  // Lines 3-4. With no processor allotted every step is complete (aps.hpp),
  // so only a pool that had workers can be inefficient.
  if (previous_allotment > 0 && utilization < delta) return {previous_desire / rho, desire_rule::inefficient};
  // Lines 5-6: satisfied = got the whole workers its desire asked for.
  if (previous_allotment >= static_cast<unsigned>(std::floor(previous_desire)))
    return {previous_desire * rho, desire_rule::efficient_satisfied};
  return {previous_desire, desire_rule::efficient_deprived};  // line 7
}

void allot_top_down_exact(std::span<const double> desires, unsigned workers, std::span<unsigned> allotment) noexcept {
  unsigned left = workers;
  for (std::size_t l = 0; l < desires.size(); ++l) {
    const auto want = static_cast<unsigned>(std::min<double>(std::floor(desires[l]), workers));
    allotment[l] = std::min(want, left);
    left -= allotment[l];
  }
  for (std::size_t l = 0; l < desires.size() && left > 0; ++l) {
    const unsigned extra = l + 1 == desires.size() ? left : (left + 1) / 2;
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
  // The paper's desires keep evolving while one level runs alone (Sec. 3),
  // so a second level that appears finds the first at its measured desire.
  bool ticks_while_one_pool_is_busy() const noexcept override { return params_.exact; }
  // The variant's backlog floor acts at every decision, so a queue that
  // forms at a pool with work is a reason to decide at once (aps.hpp). The
  // exact rule decides at quantum ticks only.
  bool wants_backlog_events() const noexcept override { return !params_.exact; }

  // A pool APS gives cores to, whose work waits behind other pools' strands, gets a standby
  // (src/sched/README.md, "Preemption"); its desire is not touched.
  bool wants_strand_events() const noexcept override { return true; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::waiting_behind_strands) {
      d.preempt(ev.pool);
      return;
    }
    // Sized by the largest id read: the exact rule reads every pool at a
    // tick or installation, the variant only the pools with work.
    const bool every_pool = params_.exact && (ev.kind == ext::event_kind::quantum || ev.kind == ext::event_kind::installed);
    for (const ext::pool_view& p : every_pool ? d.pools() : d.pools_with_work()) fit(p.id);
    if (ev.pool != ext::no_pool) fit(ev.pool);
    if (ev.kind == ext::event_kind::installed) d.set_quantum(params_.quantum);
    // An id is reused by the next pool created: its desire restarts at 0.
    if (ev.kind == ext::event_kind::pool_removed && ev.pool < desire_.size()) desire_[ev.pool] = stall_floor_[ev.pool] = 0.0;
    if (params_.exact)
      decide_exact(ev, d);
    else
      decide_variant(ev, d);
  }

 private:
  // The variant reads only the pools with work: a pool without work desires
  // nothing and gets no core from allot_top_down (its desire is 0, and the
  // rest goes to pools with work only), so leaving it out of the list
  // changes no count, and a decision costs what has work, not the pool
  // count (docs/policies.md, "Decision cost").
  void decide_variant(const ext::event& ev, ext::decision& d) {
    const auto pools = d.pools_with_work();
    // Fig. 1 line 1 holds at every decision, not only at quantum ticks: a
    // pool without ready work desires nothing (its desire restarts at 1
    // when work appears), so stale desires never hold cores. Only the pools
    // that desired something can hold a stale desire.
    std::vector<ext::pool_id> still;
    for (const ext::pool_id id : desiring_) {
      const ext::pool_view* p = d.find(id);
      if (p != nullptr && p->has_ready_work) {
        still.push_back(id);
      } else {
        desire_[id] = stall_floor_[id] = 0.0;
        desiring_listed_[id] = false;
      }
    }
    desiring_ = std::move(still);
    if (ev.kind == ext::event_kind::quantum || ev.kind == ext::event_kind::installed) {
      for (const ext::pool_view& p : pools) {
        desire_[p.id] =
            next_desire(p.has_ready_work, desire_[p.id], p.cores, p.utilization(), params_.delta, params_.rho).desire;
        stall_floor_[p.id] = stall_floor(p.stalled, p.cores);  // for this quantum only (aps.hpp)
      }
    } else if (ev.kind == ext::event_kind::became_nonempty || ev.kind == ext::event_kind::pool_added) {
      // Acted on at once (not at the next quantum): the desire restarts at 1.
      if (const ext::pool_view* p = d.find(ev.pool); p != nullptr && p->has_ready_work && desire_[p->id] == 0.0)
        desire_[p->id] = 1.0;
    }
    for (const ext::pool_view& p : pools)
      if ((desire_[p.id] != 0.0 || stall_floor_[p.id] != 0.0) && !desiring_listed_[p.id]) {
        desiring_listed_[p.id] = true;
        desiring_.push_back(p.id);
      }
    std::vector<unsigned> allotment(pools.size(), 0);
    auto desires = desires_of(pools);
    // The backlog floor (aps.hpp), for the most urgent pool with a queue only: one core moves
    // per decision, to the most urgent waiting work.
    for (std::size_t i = 0; i < pools.size(); ++i)
      if (pools[i].queued > 0) {
        desires[i] = std::max(desires[i], backlog_floor(pools[i].queued, pools[i].cores));
        break;
      }
    allot_top_down(desires, pools, d.core_count(), allotment);
    allot_counts(d, pools, allotment);
  }

  // The paper's master thread (Sec. 5): it wakes every quantum, computes
  // the desires from the utilization of the quantum that ended and allots;
  // in between nothing changes. So a pool that gets work mid-quantum waits
  // for the next tick (the runtime keeps ticking while it has work:
  // ticks_while_one_pool_is_busy), and a pool that empties keeps its cores,
  // idle, until then. A removed pool's cores cannot stay with it: they
  // sleep until the next tick rather than go to another pool, since
  // handing them out now would be the mid-quantum re-allotment the paper
  // rules out (its levels are never removed; a removed pool is one that
  // emptied for good). Not calling allot() leaves every core where it is
  // and puts the removed pool's cores to sleep (ext::decision::allot).
  void decide_exact(const ext::event& ev, ext::decision& d) {
    if (ev.kind != ext::event_kind::quantum && ev.kind != ext::event_kind::installed) return;
    const auto pools = d.pools();
    for (const ext::pool_view& p : pools)
      desire_[p.id] =
          next_desire_exact(p.has_ready_work, desire_[p.id], p.cores, p.utilization(), params_.delta, params_.rho)
              .desire;
    std::vector<unsigned> allotment(pools.size(), 0);
    allot_top_down_exact(desires_of(pools), d.core_count(), allotment);
    allot_counts(d, pools, allotment);
  }

  // What the allotment reads: the desire, raised to the stall floor for this quantum (the
  // variant's; exact mode never sets one, and it is 0 wherever the desire is).
  std::vector<double> desires_of(std::span<const ext::pool_view> pools) const {
    std::vector<double> desires(pools.size());
    for (std::size_t i = 0; i < pools.size(); ++i) desires[i] = std::max(desire_[pools[i].id], stall_floor_[pools[i].id]);
    return desires;
  }

  void fit(ext::pool_id id) {
    if (desire_.size() <= id) desire_.resize(id + 1, 0.0);
    if (stall_floor_.size() <= id) stall_floor_.resize(id + 1, 0.0);
    if (desiring_listed_.size() <= id) desiring_listed_.resize(id + 1, false);
  }

  ext::aps_params params_;
  std::vector<double> desire_;       // by pool id
  std::vector<double> stall_floor_;  // by pool id: stall_floor() of the last tick, variant only
  std::vector<ext::pool_id> desiring_;  // variant: the ids whose desire_ or stall_floor_ may be non-zero
  std::vector<bool> desiring_listed_;   // by pool id: in desiring_
};

}  // namespace

std::unique_ptr<ext::policy> make_aps_policy(const ext::aps_params& p) { return std::make_unique<aps_policy>(p); }

}  // namespace promptly::policy_impl
