// The core allotment of the `elastic` policy: elastic parallel real-time
// tasks (AMCilk Sec. 6.2, after Orr, Gill, Agrawal, Baruah et al.,
// "Elasticity of workloads and periods of parallel real-time tasks",
// RTNS 2018). A pure function, tested against brute force
// (tests/job_policies_test.cpp).
//
// The model. A task releases one instance per period; an instance has work
// C and span L (both in ms). On m dedicated cores it takes
// T(m) = (C - L) / m + L (the federated-scheduling bound). Its period may
// stretch from T_min to T_max; it runs at period T = max(T_min, T(m)), so
// its utilisation is U(m) = C / max(T_min, T(m)), at most U_max = C / T_min.
// Elasticity E says how willingly it gives utilisation up.
//
// The problem. Choose whole core counts m_i minimising
//     sum_i (U_max,i - U_i(m_i))^2 / E_i
// subject to T_i(m_i) <= T_max,i and sum_i m_i <= cores.
// Each term is convex and non-increasing in m (U is concave and increasing
// in m until T(m) reaches T_min, then constant), so starting every task at
// its fewest feasible cores and handing out the others one at a time to the
// task whose term drops most is optimal (marginal allocation for separable
// convex objectives). A core that lowers no term is not handed out: the
// caller gives such cores to other pools.
//
// Infeasible input. A task with L > T_max (or L = T_max < C) meets T_max on
// no number of cores; and the fewest cores of all tasks may exceed `cores`.
// Then tasks are admitted in list order (the caller lists the most urgent
// and oldest first) while their fewest cores fit; a task that is not
// admitted gets no core here (the policy shares the leftover cores between
// it and the pools without elastic parameters) and `feasible` is false.
//
// Invariants of the result: sum(cores) <= the cores given; a task gets 0
// cores exactly when it is not admitted; every admitted task meets T_max.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace promptly::policy_impl {

struct elastic_task {
  double work_ms = 0;        // C > 0
  double span_ms = 0;        // L, 0 < L <= C
  double period_min_ms = 0;  // T_min > 0
  double period_max_ms = 0;  // T_max >= T_min
  double elasticity = 1;     // E > 0
};

// T(m); infinite for m = 0.
double elastic_response_ms(const elastic_task& t, unsigned m) noexcept;
// The fewest cores with T(m) <= T_max, or 0 if no count meets it (up to `limit`).
unsigned elastic_min_cores(const elastic_task& t, unsigned limit) noexcept;
// (U_max - U(m))^2 / E.
double elastic_term(const elastic_task& t, unsigned m) noexcept;

struct elastic_allotment {
  std::vector<unsigned> cores;  // per task
  std::vector<bool> admitted;   // per task
  bool feasible = true;         // every task admitted
  double objective = 0;         // sum of the admitted tasks' terms
};

// The allotment described above. Throws std::invalid_argument naming the
// task and the field if a task breaks 0 < L <= C, 0 < T_min <= T_max, E > 0
// or has a parameter that is not finite.
elastic_allotment elastic_optimise(std::span<const elastic_task> tasks, unsigned cores);

}  // namespace promptly::policy_impl
