// Parameters of the policies shipped with Promptly, as runtime_config holds
// them. The policy interface itself (for writing policies) is
// promptly/ext/policy.hpp; this header is all a configuration needs.
#pragma once

#include <chrono>
#include <vector>

namespace promptly {

// Parameters of the `aps` policy (Adaptive Priority Scheduling of I-Cilk,
// "Priority Scheduling for Interactive Applications", SPAA 2020, Sec. 3
// and 5).
struct aps_params {
  double delta = 0.9;                      // efficiency threshold, in (0, 1]
  double rho = 2.0;                        // responsiveness (desire growth factor), > 1
  std::chrono::microseconds quantum{500};  // L; the authors' scripts use 500 us
  // true: the paper's rule exactly (Fig. 1 and Sec. 3): the allotment is
  // fixed for the whole quantum, an inefficient pool's desire may fall below
  // 1, a pool given no worker updates its desire like any other, leftovers
  // go half to each pool from the top whether or not it has ready work, and
  // quanta continue while a single pool is busy. false (default): Promptly's
  // variant, which reacts to a pool becoming non-empty at once, and gives the
  // most urgent pool whose ready work queues one core more at each decision
  // (docs/priorities.md compares the two, measured).
  bool exact = false;
};

// How the `fair` policy draws each worker's primary pool.
enum class fair_sampling {
  // Central, systematic sampling with credit: at each round one draw places
  // all workers, so shares hold to within one worker per round (default).
  systematic,
  // The paper's rule: each worker draws its own primary pool at its own
  // round boundaries, independently ("Fairness in Responsive Parallelism",
  // Sec. 4).
  independent,
};

// Parameters of the `fair` policy ("Fairness in Responsive Parallelism",
// ICFP 2019, Sec. 4).
struct fair_params {
  // roundQuantum: how long a worker keeps the primary pool it sampled.
  std::chrono::microseconds round{5000};
  // The fairness criterion: an integer weight per level (index = level,
  // 0 = most urgent), normalised to shares summing to 1 as the paper's
  // installDist (Fig. 6). Levels past the end weigh 0. Empty = every level
  // weighs 1. Pools created at run time carry their own weight
  // (pool_options::weight).
  std::vector<long long> weights{};
  fair_sampling sampling = fair_sampling::systematic;
};

}  // namespace promptly
