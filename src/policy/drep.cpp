// The `drep` and `drep-steal-boundary` policies: Distributed Random
// Equi-Partition (Agrawal, Lee, Li, Lu and Moseley, "Practically efficient
// scheduler for minimizing average flow time of parallel jobs", IPDPS 2019;
// AMCilk Sec. 3.2 Fig. 2 and Sec. 6.1).
//
// The rule, per core (AMCilk Sec. 6.1):
//  * a job arrives (its pool gets ready work: became_nonempty, or
//    pool_added of a pool that already has work): each core serving another
//    job moves to the new one with probability 1/n, n = the jobs with work
//    counting the new one;
//  * a job exits (its pool has no work left: became_empty, or
//    pool_removed): each core it held goes to a job with work picked
//    uniformly at random.
// Cores that serve no job with work (asleep at the start, or every job
// finished) are treated as freed: each goes to a uniformly random job with
// work. The first job to arrive therefore gets every core (n = 1), as in
// Fig. 2. A pool that runs out of work and gets some again (its tasks all
// waited on something) is an exit followed by an arrival.
//
// Classes (job_classes.hpp): DREP runs among the pools with work of the most
// urgent class only. A job of a less urgent class arrives without cores; a
// job of a more urgent class than the served one takes every core (n = 1 in
// its class); when the served class has no work left its cores are freed to
// the next class's jobs at random.
//
// The events of a batch are handed over one by one on the same view (the
// view shows the state after the batch), so the policy reconciles: it keeps
// the set of pools it has seen with work and compares it with the view,
// handling exits first and then arrivals in list order.
//
// `drep-steal-boundary` makes the same decisions; the runtime moves its
// reassigned cores only when they run out of work of their own, instead of
// at the next strand boundary (AMCilk Sec. 3.4: "preemption only when the
// worker attempts to steal", the baseline of Fig. 7 and 8). A core taken
// away from every pool (the core limit, take_core) is no move between jobs:
// it stops at its next strand boundary, as under every policy.
//
// A core held by a strand of another pool (job_classes.hpp, "Held cores")
// trades owners with a core of the holder, or else of the last job served
// after its own: each job keeps as many cores as DREP's draws gave it, and
// the held core is counted where it is. The quantum (held_core_quantum)
// only finds held cores: ticks draw nothing.
//
// Invariants
//  * owner_[c] is the pool core c was last given by this policy (no_pool:
//    none); after each decision it is a pool of the served class whenever
//    that class exists, and no_pool otherwise.
//  * with_work_ holds exactly the pools that had ready work at the end of
//    the previous decision.
//  * The only randomness is rng_, seeded at construction: equal seeds and
//    equal event sequences give equal decisions.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "job_classes.hpp"
#include "job_policies.hpp"

namespace promptly::policy_impl {
namespace {

class drep_policy : public ext::policy {
 public:
  explicit drep_policy(const drep_params& p) : rng_(p.seed) {}
  std::string_view name() const noexcept override { return "drep"; }

  void on_event(const ext::event& ev, ext::decision& d) override {
    const unsigned cores = d.core_count();
    if (ev.kind == ext::event_kind::installed) {
      d.set_quantum(held_core_quantum);  // DREP reacts to arrivals and exits only; ticks find held cores
      owner_.assign(cores, ext::no_pool);
      with_work_.clear();
    }
    owner_.resize(cores, ext::no_pool);  // a core limit change re-installs; this only guards the size
    if (tick_without_held_cores(ev, d)) return;  // DREP moves cores at arrivals and exits only
    const auto pools = d.pools_with_work();  // only pools with work own cores: no walk over the idle ones
    unsigned served_rank = 0;
    const bool any = most_urgent_rank(pools, served_rank);
    auto in_served_class = [&](ext::pool_id id) {
      const ext::pool_view* p = d.find(id);
      return any && p != nullptr && p->has_ready_work && p->rank == served_rank;
    };

    // Exits: pools seen with work that have none now (or are gone).
    std::vector<ext::pool_id> still;
    for (ext::pool_id id : with_work_) {
      const ext::pool_view* p = d.find(id);
      if (p != nullptr && p->has_ready_work) still.push_back(id);
    }
    with_work_ = std::move(still);
    // Arrivals, in list order (the most urgent and oldest first).
    for (const ext::pool_view& p : pools) {
      if (!p.has_ready_work || seen(p.id)) continue;
      if (any && p.rank == served_rank) {
        // n counts the served class's jobs with work that arrived before,
        // plus this one.
        std::size_t n = 1;
        for (ext::pool_id id : with_work_)
          if (in_served_class(id)) ++n;
        std::bernoulli_distribution move(1.0 / static_cast<double>(n));
        for (unsigned c = 0; c < cores; ++c)
          if (in_served_class(owner_[c]) && seen(owner_[c]) && move(rng_)) owner_[c] = p.id;
      }
      with_work_.push_back(p.id);
    }
    // Freed cores (their job exited, or was of another class, or they had
    // none): each to a uniformly random job of the served class.
    std::vector<ext::pool_id> served;
    for (const ext::pool_view& p : pools)
      if (in_served_class(p.id)) served.push_back(p.id);
    for (unsigned c = 0; c < cores; ++c) {
      if (in_served_class(owner_[c])) continue;
      if (served.empty()) {
        owner_[c] = ext::no_pool;
        continue;
      }
      std::uniform_int_distribution<std::size_t> pick(0, served.size() - 1);
      owner_[c] = served[pick(rng_)];
    }
    keep_held_cores_where_they_are(d, served);
    for (unsigned c = 0; c < cores; ++c) {
      if (owner_[c] == ext::no_pool)
        d.take_core(c);
      else
        d.give_core(c, owner_[c]);
    }
  }

 private:
  // Held cores trade owners (the counts per job stay DREP's).
  void keep_held_cores_where_they_are(const ext::decision& d, const std::vector<ext::pool_id>& served) {
    if (held_cores(d).empty()) return;
    std::vector<unsigned> counts(served.size(), 0);
    for (const ext::pool_id o : owner_) {
      const auto it = std::find(served.begin(), served.end(), o);
      if (it != served.end()) ++counts[static_cast<std::size_t>(it - served.begin())];
    }
    std::vector<ext::pool_id> pinned = pin_held_cores(d, served, counts);
    if (std::all_of(pinned.begin(), pinned.end(), [](ext::pool_id p) { return p == ext::no_pool; })) return;
    owner_ = cores_for_counts(owner_, std::move(pinned), served, counts);
  }

  bool seen(ext::pool_id id) const noexcept {
    return std::find(with_work_.begin(), with_work_.end(), id) != with_work_.end();
  }

  std::mt19937_64 rng_;
  std::vector<ext::pool_id> owner_;      // by core
  std::vector<ext::pool_id> with_work_;  // pools with work at the last decision, in arrival order
};

class drep_steal_boundary_policy final : public drep_policy {
 public:
  using drep_policy::drep_policy;
  std::string_view name() const noexcept override { return "drep-steal-boundary"; }
  // AMCilk Sec. 3.4: the baseline moves a core only when its deque is empty.
  bool switches_only_when_out_of_work() const noexcept override { return true; }
};

}  // namespace

std::unique_ptr<ext::policy> make_drep_policy(const drep_params& p) { return std::make_unique<drep_policy>(p); }
std::unique_ptr<ext::policy> make_drep_steal_boundary_policy(const drep_params& p) {
  return std::make_unique<drep_steal_boundary_policy>(p);
}

}  // namespace promptly::policy_impl
