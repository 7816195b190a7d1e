// A discrete-event simulator of Promptly's scheduler (docs/simulator.md):
// P workers run a workload (workload.hpp) under one of the runtime's
// policies, whose decision code is the library's own (ext::make_policy and
// the runtime's decision_impl, which turns a policy's actions into one
// assignment per core), in simulated time, for P from 1 to thousands.
//
// What is modelled, after src/sched/README.md:
//  * pools with an injection queue, one deque per worker serving the pool
//    and the deques workers left behind (muggable, taken whole first);
//  * ranked sets served as a priority order (the runtime's own walks,
//    sched/set_walk.hpp), every pool, or none; switching only at strand
//    boundaries (a node's end), every fourth boundary for a donated worker;
//    the steal-boundary mode;
//  * Taskflow's sleep protocol per pool (actives, thieves, steal_bound
//    failures, yield_bound yields, the last thief of a busy domain naps);
//  * decisions: events recorded when pools flip empty/non-empty, are added
//    or removed, and (for a policy that asks) when a release leaves two
//    tasks queued at a pool with work; a decision `decision_us` after the
//    first pending event;
//    quanta while two pools had work (or the policy wants ticks).
// What is not: fibers and parking on futures (a node never waits), the
// memory system, the OS (a worker is a core; no preemption).
//
// Random probing is drawn, not stepped: while k of the P probe targets have
// work for a thief, its failures until a hit are geometric with p = k/P
// (each attempt picks a target uniformly, as steal_once does); while none
// has, the thief spins until work appears or its budget is spent.
//
// Invariants (asserted in the Debug build, counted in result::violations
// otherwise): every node runs exactly once; counters never go negative;
// a worker runs only nodes of the pool it serves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../policy/serpt.hpp"  // serpt_params: the defaults below are its
#include "promptly/policy_params.hpp"
#include "workload.hpp"

namespace promptly::sim {

// Costs of the mechanism, in microseconds. The defaults are this machine's
// measurements (rt.stats().mechanism, bench/results/jobs/README.md; the
// validation report bench/results/sim/ says how well they fit).
struct costs {
  double node_us = 0.02;          // per node: pop/push and bookkeeping around the strand
  double steal_us = 0.2;          // a successful steal
  double failed_steal_us = 0.05;  // one failed probe
  double yield_us = 0.5;          // a yield before each probe after steal_bound failures
  double mug_us = 0.3;            // taking a left deque whole
  double move_us = 0.5;           // leaving a pool and arriving at another
  double wake_us = 20;            // a notified sleeper -> running
  // If not empty, each wake-up's cost is drawn uniformly from these (a measured distribution,
  // e.g. bench-bin/sim_vcpu_wake's) instead of wake_us: the machine's tail, not only its median.
  std::vector<double> wake_samples_us;
  double nap_us = 1000;           // sentinel_nap: the last thief's bounded nap
  double decision_us = 15;        // first pending event -> decision applied
};

struct config {
  unsigned workers = 2;
  std::string policy = "prompt";  // any ext::policy_names() entry
  promptly::aps_params aps{};
  promptly::fair_params fair{};
  std::uint64_t seed = 1;         // probes and the fair policy's draws
  costs cost{};
  unsigned steal_bound = 0;       // 0: 2 * (workers + 1), as the runtime
  unsigned yield_bound = 100;
  bool never_sleep = false;       // ABP: thieves never sleep (sleep_mode::never)
  // Each request runs in a pool of its own made at its release and removed
  // when it ends (the job server), ranked by the request's pool field;
  // otherwise pools are the workload's levels 0..pools-1.
  bool pool_per_request = false;
  // The `serpt` policy's parameters (src/policy/serpt.hpp); each request's
  // size_hint_us is its expected size on the policy's size board.
  // The defaults are serpt_params' (the runtime's).
  double serpt_speedup_exponent = policy_impl::serpt_params{}.speedup_exponent;
  double serpt_slowdown_cap = policy_impl::serpt_params{}.slowdown_cap;
  double serpt_due_core_share = policy_impl::serpt_params{}.due_core_share;
  double serpt_work_per_core_us = static_cast<double>(policy_impl::serpt_params{}.work_per_core.count());
  double serpt_start_wait_us = static_cast<double>(policy_impl::serpt_params{}.start_wait_bound.count());
  double serpt_quantum_us = static_cast<double>(policy_impl::serpt_params{}.quantum.count());
  double time_limit_us = 3.6e9;   // stops a run that would not end (reported, never silent)
  // Measure result::undersubscribed_us (Taskflow's Lemma 1, per pool): costs a
  // pass over the workers per event, so tests turn it on.
  bool check_lemma1 = false;
};

struct request_result {
  std::size_t index = 0;
  std::string kind;
  std::uint32_t pool = 0;
  double release_us = 0, start_us = 0, finish_us = 0, response_us = 0;
  double work_us = 0, span_us = 0;
};

struct result {
  unsigned workers = 0;
  std::string policy;
  double makespan_us = 0;         // release of the first request to the end of the last
  double busy_us = 0;             // worker time running nodes
  double awake_us = 0;            // worker time not asleep or napping (CPU utilisation * makespan)
  std::uint64_t nodes = 0, steals = 0, mugs = 0, moves = 0, sleeps = 0, naps = 0, wakes = 0, decisions = 0, quanta = 0;
  std::uint64_t events = 0;
  // Time during which some pool had an active worker and a worker of its set
  // asleep in the sleep protocol, but no thief, awake or napping: Taskflow's
  // Lemma 1 (with the nap: Lemma 1', src/sched/README.md) says never.
  // Measured only with config::check_lemma1.
  double undersubscribed_us = 0;
  bool completed = true;          // false: the time limit or a deadlock stopped it (see `problem`)
  std::string problem;
  std::vector<request_result> requests;
  double utilization() const noexcept { return makespan_us > 0 ? awake_us / makespan_us : 0; }
};

// Throws std::invalid_argument for a bad configuration (no workers, an
// unknown policy) naming the problem.
result simulate(const workload& w, const config& c);

}  // namespace promptly::sim
