// The `elastic` policy: elastic parallel real-time scheduling (AMCilk
// Sec. 6.2). Pools that carry elastic parameters (pool_options::elastic)
// get the core counts of elastic_optimise (elastic_optimizer.hpp); the
// others share what is left.
//
// Per class (job_classes.hpp), most urgent first, among its pools with work:
//  1. the elastic pools get the optimiser's counts over the cores left for
//     the class (they take no core that lowers no term), listed earliest
//     deadline first: an instance's deadline is its release (the pool's
//     creation) plus T_max, so the optimiser, which admits in list order
//     while the fewest cores of each fit, admits the instance that must end
//     soonest. Oldest first instead admitted a long-period instance that
//     happened to be released earlier and left a short-period one that
//     needed every core to one core and a miss (the elastic bench's 2-core
//     case: a task needing 2 cores at its reduced period, another needing 1).
//     An instance that can no longer meet its deadline comes after every
//     instance that can: by its deadline it came first and took a core
//     from the next instance, which then missed too, so one miss became a
//     run of them (EDF's domino effect under overload; on the elastic bench
//     a task-2 instance with 2.7 ms left and about 6 ms of work took one of
//     the 2 cores from a task-1 instance that needed both; 24 alternated
//     runs: 249 misses before, 120 after). "Can no longer"
//     is estimated from its declaration and its measured work: the work
//     left, C - work done (at least 0), with span min(L, that), does not
//     fit in the time to its deadline on all the cores. The work done is
//     the pool's work summed over quantum ticks (work_ledger; for a pool
//     created before this policy was installed, since the last tick before:
//     less than it did, so it may be judged late too soon). An instance
//     turns late between events and is judged at the next one (every
//     release and end is one);
//  2. the other pools of the class, and elastic pools the optimiser could
//     not admit (their T_max cannot be met), split the rest evenly, oldest
//     first, without a cap (equi's rule).
// Cores left after every class (every elastic pool saturated, no other pool
// with work) go to the elastic pools with work evenly: extra cores shorten
// their instances and nobody else can use them.
// Decisions are re-evaluated on every pool event (quantum ticks,
// held_core_quantum, only find cores held by another pool's strand:
// job_classes.hpp, "Held cores"); the parameters of a pool
// never change, so a change of period is a new pool (a job server releases
// each instance as a job). desire(pool) reports the optimiser's count.
//
// Invariants
//  * Stateless between decisions except wanted_ (for stats) and the work
//    ledger: a decision depends only on its view and the work summed.
#include <algorithm>
#include <chrono>
#include <vector>

#include "elastic_optimizer.hpp"
#include "job_classes.hpp"
#include "job_policies.hpp"

namespace promptly::policy_impl {
namespace {

// Whether the instance's work left, estimated as C minus the work measured
// so far, fits in `ms_left` on every core (rule 1 above).
bool can_still_meet_deadline(const ext::pool_view& p, double done_s, double ms_left, unsigned cores) {
  if (ms_left <= 0) return false;
  const double work_left = std::max(0.0, p.elastic->work_ms - done_s * 1e3);
  const double span_left = std::min(p.elastic->span_ms, work_left);
  return elastic_response_ms({work_left, span_left, ms_left, ms_left, 1}, std::max(cores, 1u)) <= ms_left;
}

class elastic_policy final : public ext::policy {
 public:
  std::string_view name() const noexcept override { return "elastic"; }
  double desire(ext::pool_id pool) const noexcept override { return pool < wanted_.size() ? wanted_[pool] : 0.0; }

  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::installed) d.set_quantum(held_core_quantum);
    work_.note(ev, d);
    if (tick_without_held_cores(ev, d)) return;  // counts change at pool events only
    const auto pools = d.pools_with_work();  // a pool without work gets no core (job_classes.hpp)
    const unsigned cores = d.core_count();
    std::uint32_t end = 0;
    for (const ext::pool_view& p : pools) end = std::max(end, p.id + 1);
    wanted_.assign(end, 0.0);

    std::vector<unsigned> counts = serve_by_rank(pools, cores, [&](std::span<const std::size_t> members, unsigned left) {
      std::vector<elastic_task> tasks;
      std::vector<std::size_t> elastic_at;  // position in members
      for (std::size_t k = 0; k < members.size(); ++k)
        if (pools[members[k]].elastic) elastic_at.push_back(k);
      // Earliest deadline first among the instances that can still meet
      // theirs, then the others; ties (and equal deadlines) keep the class
      // order.
      auto ms_left = [&](std::size_t k) {
        const ext::pool_view& p = pools[members[k]];
        return p.elastic->period_max_ms - std::chrono::duration<double, std::milli>(p.age).count();
      };
      std::vector<bool> can_meet(members.size(), false);
      for (std::size_t k : elastic_at) {
        const ext::pool_view& p = pools[members[k]];
        can_meet[k] = can_still_meet_deadline(p, work_.done_s(p), ms_left(k), cores);
      }
      std::stable_sort(elastic_at.begin(), elastic_at.end(), [&](std::size_t a, std::size_t b) {
        if (can_meet[a] != can_meet[b]) return static_cast<bool>(can_meet[a]);
        return ms_left(a) < ms_left(b);
      });
      for (std::size_t k : elastic_at) {
        const auto& e = pools[members[k]].elastic;
        tasks.push_back({e->work_ms, e->span_ms, e->period_min_ms, e->period_max_ms, e->elasticity});
      }
      std::vector<unsigned> got(members.size(), 0);
      std::vector<bool> shares_rest(members.size(), true);
      if (!tasks.empty()) {
        // create_pool validated the parameters, so this does not throw; if
        // it did, on_event's exception leaves the cores as they were.
        const elastic_allotment a = elastic_optimise(tasks, left);
        for (std::size_t j = 0; j < tasks.size(); ++j) {
          const std::size_t k = elastic_at[j];
          got[k] = a.cores[j];
          left -= a.cores[j];
          shares_rest[k] = !a.admitted[j];
          wanted_[pools[members[k]].id] = a.cores[j];
        }
      }
      std::vector<std::size_t> rest;
      for (std::size_t k = 0; k < members.size(); ++k)
        if (shares_rest[k]) rest.push_back(k);
      const std::vector<unsigned> split = equal_split(rest.size(), left);
      for (std::size_t j = 0; j < rest.size(); ++j) got[rest[j]] += split[j];
      return got;
    });

    unsigned used = 0;
    for (unsigned c : counts) used += c;
    std::vector<std::size_t> elastic_busy;
    for (std::size_t i = 0; i < pools.size(); ++i)
      if (pools[i].has_ready_work && pools[i].elastic) elastic_busy.push_back(i);
    const std::vector<unsigned> extra = equal_split(elastic_busy.size(), cores - used);
    for (std::size_t j = 0; j < elastic_busy.size(); ++j) counts[elastic_busy[j]] += extra[j];
    allot_counts(d, pools, counts);
  }

 private:
  std::vector<double> wanted_;  // by pool id: the optimiser's count at the last decision
  work_ledger work_;            // work done, by pool
};

}  // namespace

std::unique_ptr<ext::policy> make_elastic_policy() { return std::make_unique<elastic_policy>(); }

}  // namespace promptly::policy_impl
