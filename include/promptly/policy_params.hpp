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
  std::vector<long long> weights;
};

}  // namespace promptly
