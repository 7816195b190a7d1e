// The job server's core-allocation policies (docs/job-policies.md): their
// parameters, factories and the pure rules the tests check branch by
// branch. Each policy lives in its own file (equi.cpp, drep.cpp,
// asteal.cpp, elastic.cpp); all obey the priority-class rule of
// job_classes.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {

// --- equi (equi.cpp) ---------------------------------------------------------
std::unique_ptr<ext::policy> make_equi_policy();

// --- drep, drep-steal-boundary (drep.cpp) -----------------------------------
struct drep_params {
  // The random choices are reproducible: the same seed and the same events
  // give the same decisions (tests rely on it).
  std::uint64_t seed = 0x5eed'd2e9'0000'0001ull;
};
std::unique_ptr<ext::policy> make_drep_policy(const drep_params& p = {});
// The same decisions; a reassigned core moves only when it runs out of work
// of its own (AMCilk Sec. 3.4 and 6.1: the steal-boundary baseline).
std::unique_ptr<ext::policy> make_drep_steal_boundary_policy(const drep_params& p = {});

// --- asteal (asteal.cpp) -----------------------------------------------------
struct asteal_params {
  std::chrono::microseconds quantum{2000};  // the adaptation period (AMCilk Sec. 6.3 tried 0.5-10 ms, used 1 ms)
  double delta = 0.95;                      // utilisation threshold: a quantum below it is inefficient, in (0, 1]
  double rho = 2.0;                         // desire growth / shrink factor, > 1
  // Cores no pool desires go to the pools with work (true), or sleep as in
  // A-STEAL's analysis, which assumes no job gets more than it desires.
  bool share_surplus = true;
};

// Which branch of A-STEAL's desire rule decided (for tests and traces).
enum class asteal_rule { inefficient, efficient_satisfied, efficient_deprived, no_cores };

struct asteal_desire {
  double desire;
  asteal_rule rule;
};

// A-STEAL's desire estimation (Agrawal, He, Hsu, Leiserson, "Adaptive
// work-stealing with parallelism feedback", TOCS 2008, Sec. 3; AMCilk
// Sec. 6.3) for one pool with ready work at the end of a quantum:
//  * inefficient (utilisation < delta): d' = d / rho, never below 1;
//  * efficient and satisfied (allotted >= floor(d)): d' = d * rho, never
//    above `max_desire` (the core count: a desire past it cannot be met);
//  * efficient and deprived: d' = d. A pool that held no core in the quantum
// ran nothing, so its utilisation says nothing: it keeps its desire
// (no_cores; as aps does).
asteal_desire asteal_next_desire(double desire, unsigned allotted, double utilization, double delta, double rho,
                                 double max_desire) noexcept;

// Throws std::invalid_argument naming a parameter out of its range.
std::unique_ptr<ext::policy> make_asteal_policy(const asteal_params& p = {});

// --- elastic (elastic.cpp; the optimiser in elastic_optimizer.hpp) -----------
std::unique_ptr<ext::policy> make_elastic_policy();

}  // namespace promptly::policy_impl
