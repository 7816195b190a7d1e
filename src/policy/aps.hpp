// Adaptive Priority Scheduling (I-Cilk, "Priority Scheduling for
// Interactive Applications", SPAA 2020, Sec. 3): per-pool desire (Fig. 1)
// and the top-down allotment with leftovers shared as in Sec. 5. Two rule
// sets, both pure functions so that every branch is table-tested
// (tests/policy_test.cpp):
//  * Promptly's variant (aps_params::exact = false, the default):
//    next_desire and allot_top_down.
//  * The paper's rule exactly (aps_params::exact = true):
//    next_desire_exact and allot_top_down_exact.
// docs/priorities.md, "APS: the paper's rule and ours", lists every
// difference and why.
#pragma once

#include <cstddef>
#include <span>

#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {

// Which line of Fig. 1 decided a desire (for tests and traces).
enum class desire_rule { no_ready_work, restart, inefficient, efficient_satisfied, efficient_deprived };

struct desire_result {
  double desire;
  desire_rule rule;
};

// Fig. 1 for one pool: `previous_desire` is d_{q-1}, `previous_allotment`
// p_{q-1}, `utilization` the fraction of the pool's worker time spent
// working in q-1 (our measure of complete steps: a quantum is efficient
// when utilization >= delta, i.e. at most (1 - delta) L incomplete steps).
//
// Promptly's variant. Two interpretations, stated because the paper leaves
// them open: a pool allotted no worker in q-1 keeps its desire (no steps
// ran, so nothing was inefficient), and an inefficient pool's desire does
// not fall below 1 (allotments are whole workers: a desire below 1 would
// give a pool with work no worker).
desire_result next_desire(bool has_ready_work, double previous_desire, unsigned previous_allotment,
                          double utilization, double delta, double rho) noexcept;

// A rule of the variant that Fig. 1 does not have, because the paper
// assumes dedicated processors: a pool that had cores in q-1 but was
// `stalled` (pool_view: work queued at both ticks, none of its tasks
// started) asks, for quantum q only, for one core more than it had. Its
// cores did not run: on a machine shared with other processes the OS took
// them, and its queued work is the most urgent the allotment serves. The
// desire Fig. 1 carries to q+1 is left alone: a preempted core counts as
// working, so feeding the extra core into the desire would let preemption
// inflate it (measured: the email server's least urgent level then missed
// its periods). Returns the floor under the pool's desire for quantum q
// (0: none).
double stall_floor(bool stalled, unsigned previous_allotment) noexcept;

// A second rule of the variant that Fig. 1 does not have: at every decision
// (not only at ticks), the most urgent pool with tasks waiting in its queue
// (pool_view::queued: made ready from outside its cores, such as a client
// loop whose I/O completed, and taken by none of them yet) asks, for that
// decision only, for one core more than it has. Fig. 1 learns parallelism
// from whole quanta; an I/O-bound urgent level is idle for much of each
// (inefficient, so its desire stays at 1) and yet has bursts of ready work
// shorter than a quantum, which then queue behind its one core while a less
// urgent level's core runs. Measured on the proxy (2 cores, 5 alternated
// rounds): resp p99 0.72x of `oblivious` at 32 clients against 1.45x
// without the floor; only the most urgent such pool gets it, so one core
// moves per decision. The desire itself is left alone, as with the stall
// floor. Returns the floor (0: none); a pool with no core gets none, since
// its desire already asks for one. The variant asks for backlog events
// (ext::policy::wants_backlog_events), so a queue that forms behind a busy
// core is decided on at once, not at the next tick (src/sched/README.md,
// "Backlog events").
double backlog_floor(std::size_t queued, unsigned cores) noexcept;

// Fig. 1 as written (exact mode): no floor of 1, so an inefficient pool's
// desire may fall below 1, and then floor(d) = 0 workers. A pool allotted
// no worker goes through lines 3-7 like any other. The paper defines a
// complete step as one in which all p allotted processors work (Sec. 3: "if
// at least p nodes are ready, it picks any p"); with p = 0 every step is
// complete, so such a quantum is efficient: satisfied when the desire asked
// for no whole worker (d < 1, so it grows by rho and the pool gets a worker
// within log_rho(1/d) quanta) and deprived otherwise (it keeps its desire
// and waits for the more urgent pools to leave it cores).
//
// Satisfied (line 5, p_{q-1} = d_{q-1}) is read for whole workers in both
// rule sets: p_{q-1} >= floor(d_{q-1}). The paper's desires are real numbers
// (multiplied and divided by rho) and its allotments processors, so the
// literal equality would make every fractional desire deprived forever.
desire_result next_desire_exact(bool has_ready_work, double previous_desire, unsigned previous_allotment,
                                double utilization, double delta, double rho) noexcept;

// Promptly's top-down allotment: pool 0 gets min(floor(d), P), pool 1 gets
// min(floor(d), P - p0), ... Then the leftover workers are handed out from
// the most urgent pool with ready work down, half of the remainder (rounded
// up) each (Sec. 5, "half of the left-over cores to each priority level");
// the least urgent pool with work takes whatever is still left, so no
// worker sleeps while work exists. Pools without ready work get none.
// `pools` is in rank order (most urgent first); desires[i] and
// allotment[i] belong to pools[i].
void allot_top_down(std::span<const double> desires, std::span<const ext::pool_view> pools, unsigned workers,
                    std::span<unsigned> allotment) noexcept;

// The paper's allotment (exact mode): the same top-down pass over floor(d)
// (Sec. 3), then the leftovers of Sec. 5 as written: "half of the left-over
// cores to each priority level, starting from the highest level to the
// lowest until it runs out of cores", whether or not the level has ready
// work. Half is rounded up (a remainder of 1 goes to the next level rather
// than to nobody) and the last pool takes what is still left (the paper
// stops when it runs out of cores, so one pass must end with none): every
// worker is allotted whenever a pool exists, and a core at an empty pool
// stays there, idle, until the next quantum.
void allot_top_down_exact(std::span<const double> desires, unsigned workers, std::span<unsigned> allotment) noexcept;

}  // namespace promptly::policy_impl
