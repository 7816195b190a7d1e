// The `serpt` job policy: shortest expected remaining processing time
// (docs/job-policies.md). Size-aware core allocation between jobs after
// Berg, Dorsman and Harchol-Balter, "Towards optimality in parallel
// scheduling" (SIGMETRICS 2018) and Berg, Vesilo and Harchol-Balter, "heSRPT:
// Parallel scheduling to minimize mean slowdown" (Performance 2020).
//
// What the policy needs to know that a pool_view does not say is each job's
// expected size: a size_board, written by whoever knows the jobs (the job
// server from its size estimator, the simulator from its workload) and read
// at every decision. A pool the board does not name has the prior size.
//
// The pure rules below (remaining work, service order, the heSRPT split,
// whole cores) are what the policy applies; tests/serpt_test.cpp checks them
// table-driven and the split against a brute-force optimum.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {

// Expected total work of each live pool, in worker-seconds. Thread-safe:
// the job server writes from its submit and reaper threads while the
// runtime's decision thread reads.
class size_board {
 public:
  void set(ext::pool_id pool, double expected_s);
  void erase(ext::pool_id pool);
  // out[i] = the expected size of pools[i], or `otherwise` if not on the board.
  void lookup(std::span<const ext::pool_id> pools, double otherwise, std::vector<double>& out) const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<ext::pool_id, double> expected_s_;
};

struct serpt_params {
  // p of the speedup curve s(k) = k^p a job gets from k cores, in (0, 1].
  // 1 (linear: the jobs' parallelism exceeds the cores) gives every core to
  // the job with the least expected remaining work (SRPT); below 1 the cores
  // are split by heSRPT's rule, which tends to an equal split as p -> 0.
  double speedup_exponent = 1.0;
  // The expected size of a job the board does not name (worker-seconds).
  double prior_s = 0.002;
  // Aging: jobs are served in the order of the time each would reach this
  // slowdown if it ran alone from now: its arrival plus slowdown_cap times
  // its expected remaining time alone (expected remaining work over the
  // cores it can use, usable_cores), earliest first: earliest-deadline-first
  // on slowdown deadlines, as in Bender, Chakrabarti and Muthukrishnan's
  // stretch scheduling ("Flow and stretch metrics for scheduling continuous
  // job streams", SODA 1998), with remaining instead of total work so that a
  // large cap is SRPT and a small one first come, first served. A job whose
  // age has reached slowdown_cap times its expected remaining time alone is
  // ahead of every job that arrives after that, so its slowdown against its
  // estimate stays about the cap plus the work of the jobs already ahead.
  // 6: in promptly-sim's replays of the jobs suite's traces (2 cores, 1200
  // jobs, 3 rounds) p99 flow time 0.77x drep's on Bing at 75% load where 10
  // gave 0.79x (finance 0.68x against 0.76x), for 0.03x more of drep's mean
  // (bench/results/jobs/serpt/README.md, "A lone due job").
  double slowdown_cap = 6.0;
  // The share of the cores that serves the jobs past their slowdown
  // deadline ("due") in deadline order; at least one core. The other due
  // jobs come next, least expected remaining work first, ahead of the jobs
  // not yet due. 1 is earliest-deadline-first for every due job: when the
  // machine runs near saturation nearly every job is due, and the deadline
  // order of jobs that all waited far past their deadlines is close to their
  // arrival order, first come first served. Below 1, that share keeps the
  // longest-overdue job moving (no due job waits forever) while the rest of
  // the machine serves the due jobs shortest first. A lone due job has no
  // order to degrade and may use every core: held to the share, the largest
  // jobs, the last to become due, lingered at the tail (promptly-sim, Bing
  // 75%: p99 0.85x drep's against 0.79x). 0.5: in the jobs suite run live
  // on 2 cores (6 rounds), mean flow time 0.44x drep's at 90% Bing load
  // where 1 gave 1.42x, and 0.56x at 75% (was 0.63x); in promptly-sim,
  // where few jobs are due at these loads, means within 0.02x of 1's
  // (bench/results/jobs/serpt/README.md, "Due jobs by remaining work").
  double due_core_share = 0.5;
  // A job gets at most one core per this much expected remaining work; the
  // cores it cannot use go down the service order. Moving a core to a job
  // costs a wake-up and the steals that spread the job's work, so a core
  // given less work than a few such costs mostly looks for work.
  std::chrono::microseconds work_per_core{100};
  // A job with work that has never been given a core for this long is
  // served before everything else, the oldest first: every admitted job
  // gets its first core within about this bound plus one quantum, unless
  // more such jobs than cores wait at once.
  std::chrono::microseconds start_wait_bound{20'000};
  // The re-ranking period: remaining work and waiting time change between
  // events, so ranks are refreshed at quantum ticks.
  std::chrono::microseconds quantum{2'000};
};

// Throws std::invalid_argument naming a parameter out of range.
void validate(const serpt_params& p);

// Expected remaining work of a job of expected size `expected_s` that has
// done `done_s`: expected_s - done_s while it is below its estimate. Past it
// the estimate was too small: it is doubled until it exceeds the work done,
// and the remaining work is the rest of that. So a job that outlives its
// estimate first jumps behind the jobs whose estimates still hold (run on
// estimates alone, SRPT lets an underestimated job keep every core: Scully,
// Grosof and Mitzenmacher, "Uniform bounds for scheduling with job size
// estimates", ITCS 2022), then moves up again as it runs, as under SRPT, so
// that a job once served is finished rather than shared among the jobs past
// their estimates, as a remaining work growing with the work done would.
// With a third of the hints 4x wrong, on ideal jobs
// (bench/jobs/sim_jobs_ideal.py): 1-2% lower mean flow time than "as much
// again as done", and SRPT on this estimate within 2-5% of the Gittins-index
// rule that knows the hints' error distribution. An estimate of 0 or less:
// the work done.
double expected_remaining(double expected_s, double done_s) noexcept;

// One job as the ranking sees it.
struct serpt_job {
  double expected_s = 0;     // expected total work
  double done_s = 0;         // work done so far
  double age_s = 0;          // time since it arrived
  bool ever_served = false;  // it has been given a core
};

// Which rule put a job where it is in the service order. tier_of tells the
// two a job's own state decides; serpt_rank further splits the
// slowdown_deadline tier into the due jobs within the cores' share
// (due_core_share) and the rest.
enum class serpt_tier { start_wait = 0, slowdown_deadline = 1 };
serpt_tier tier_of(const serpt_job& j, const serpt_params& p) noexcept;

// The cores a job with `remaining_s` of expected work left can use: one per
// work_per_core of it, at least 1, at most `cores` (all of them when
// work_per_core is 0).
unsigned usable_cores(double remaining_s, const serpt_params& p, unsigned cores) noexcept;

// The time, from now, at which job j would reach the slowdown cap if it ran
// alone from now on: slowdown_cap x its expected remaining time alone (its
// expected remaining work over the cores of the machine, `cores`, it can
// use) - age. The service order of the slowdown_deadline tier, earliest first.
double slowdown_deadline_s(const serpt_job& j, const serpt_params& p, unsigned cores) noexcept;

// The service order and what each job in it may use.
struct serpt_ranking {
  std::vector<std::size_t> order;  // indices into the jobs, first served first
  std::vector<unsigned> usable;    // usable[k]: the most cores order[k] is given
};

// The service order: first the start_wait tier, the oldest first. Then the
// jobs past their slowdown deadline (due), earliest deadline first, until
// the cores they can use (usable_cores) fill the due share of `cores`
// (due_core_share x cores rounded down, at least 1; every core when only
// one job is due; the job that crosses it is capped at what is left of
// it). Then the other due jobs, least expected remaining work first; then
// the jobs not yet due, earliest slowdown deadline first. Ties: the older,
// then the lower index. usable: each job's usable_cores, or its cap within
// the due share.
serpt_ranking serpt_rank(std::span<const serpt_job> jobs, const serpt_params& p, unsigned cores);
// serpt_rank's order alone.
std::vector<std::size_t> serpt_order(std::span<const serpt_job> jobs, const serpt_params& p, unsigned cores);

// heSRPT's split of the machine among m jobs, listed in service order
// (smallest remaining first), for speedup k^p with 0 < p <= 1 and weights w
// (1 each minimises mean flow time; 1 / size minimises mean slowdown, the
// Performance 2020 paper's objective). With the jobs renumbered largest
// first (i = 1 .. m, job m the smallest) and z_i = w_1 + .. + w_i, job i gets
// (z_i / z_m)^(1/(1-p)) - (z_(i-1) / z_m)^(1/(1-p)); p = 1 gives everything
// to the smallest (SRPT). Returns fractions summing to 1, in the input order.
std::vector<double> hesrpt_split(std::span<const double> weights, double p);

// heSRPT's split with a cap per job: usable[i] is the fraction of the
// machine job i (in service order) can use. Each job in turn gets the
// smaller of its cap and heSRPT's share for it among the jobs from it on
// (the split is scale-free: heSRPT over jobs i..m is the full split's
// shares of them, renormalised), so what a capped job cannot use goes down
// the order in heSRPT's proportions; what is still left (a job late in the
// order capped below its share) goes round again to the jobs with room.
// With no cap binding it is hesrpt_split itself. What is left when every
// cap binds is spread by hesrpt_split (to the first job under linear
// speedup): a core is better used past a job's cap than asleep. Returns
// fractions summing to 1 (none for no jobs).
std::vector<double> capped_split(std::span<const double> usable, double p);

// Whole cores from fractions: floor(f * cores) each, then the cores left one
// each to the largest remainders (ties: the earlier in the list). Jobs past
// the cores' reach get 0.
std::vector<unsigned> whole_cores(std::span<const double> fractions, unsigned cores);

std::unique_ptr<ext::policy> make_serpt_policy(const serpt_params& p = {}, std::shared_ptr<const size_board> sizes = {});

}  // namespace promptly::policy_impl
