// Adaptive Priority Scheduling (I-Cilk, "Priority Scheduling for
// Interactive Applications", SPAA 2020, Sec. 3): per-pool desire (Fig. 1)
// and the top-down allotment with leftovers shared as in Sec. 5. Pure
// functions so that every branch is table-tested (tests/policy_test.cpp).
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
desire_result next_desire(bool has_ready_work, double previous_desire, unsigned previous_allotment,
                          double utilization, double delta, double rho) noexcept;

// Two interpretations, stated because the paper leaves them open: a pool
// allotted no worker in q-1 keeps its desire (no steps ran, so nothing was
// inefficient), and an inefficient pool's desire does not fall below 1.
//
// Top-down allotment: pool 0 gets min(floor(d), P), pool 1 gets
// min(d, P - p0), ... Then the leftover workers are handed out from the
// most urgent pool with ready work down, half of the remainder (rounded up)
// each (Sec. 5, "half of the left-over cores to each priority level"); the
// least urgent pool with work takes whatever is still left, so no worker
// sleeps while work exists. Pools without ready work get none. `pools` is in
// rank order (most urgent first); desires[i] and allotment[i] belong to pools[i].
void allot_top_down(std::span<const double> desires, std::span<const ext::pool_view> pools, unsigned workers,
                    std::span<unsigned> allotment) noexcept;

}  // namespace promptly::policy_impl
