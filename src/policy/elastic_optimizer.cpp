// The elastic real-time allotment (elastic_optimizer.hpp states the model,
// the rule for infeasible input and the invariants).
#include "elastic_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace promptly::policy_impl {

double elastic_response_ms(const elastic_task& t, unsigned m) noexcept {
  if (m == 0) return std::numeric_limits<double>::infinity();
  return (t.work_ms - t.span_ms) / static_cast<double>(m) + t.span_ms;
}

unsigned elastic_min_cores(const elastic_task& t, unsigned limit) noexcept {
  if (limit == 0 || t.span_ms > t.period_max_ms) return 0;
  const double parallel = t.work_ms - t.span_ms;
  if (parallel <= 0) return 1;  // C = L: one core is as fast as any number
  const double slack = t.period_max_ms - t.span_ms;
  if (slack <= 0) return 0;
  // m >= (C - L) / (T_max - L); the estimate is corrected by the exact test
  // either way, since floating point may put it one off.
  const double estimate = std::ceil(parallel / slack);
  unsigned m = estimate >= static_cast<double>(limit) ? limit : std::max(1u, static_cast<unsigned>(estimate));
  while (m > 1 && elastic_response_ms(t, m - 1) <= t.period_max_ms) --m;
  while (m <= limit && elastic_response_ms(t, m) > t.period_max_ms) ++m;
  return m <= limit ? m : 0;
}

double elastic_term(const elastic_task& t, unsigned m) noexcept {
  const double u_max = t.work_ms / t.period_min_ms;
  const double u = m == 0 ? 0.0 : t.work_ms / std::max(t.period_min_ms, elastic_response_ms(t, m));
  return (u_max - u) * (u_max - u) / t.elasticity;
}

namespace {

void check(const elastic_task& t, std::size_t i) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument("promptly: elastic task " + std::to_string(i) + ": " + what);
  };
  for (double v : {t.work_ms, t.span_ms, t.period_min_ms, t.period_max_ms, t.elasticity})
    if (!std::isfinite(v)) bad("every parameter must be finite (one is " + std::to_string(v) + ")");
  // Written as negations so that NaN fails every test.
  if (!(t.work_ms > 0)) bad("work_ms = " + std::to_string(t.work_ms) + " must be > 0");
  if (!(t.span_ms > 0 && t.span_ms <= t.work_ms))
    bad("span_ms = " + std::to_string(t.span_ms) + " must be in (0, work_ms = " + std::to_string(t.work_ms) + "]");
  if (!(t.period_min_ms > 0)) bad("period_min_ms = " + std::to_string(t.period_min_ms) + " must be > 0");
  if (!(t.period_max_ms >= t.period_min_ms))
    bad("period_max_ms = " + std::to_string(t.period_max_ms) + " must be >= period_min_ms = " +
        std::to_string(t.period_min_ms));
  if (!(t.elasticity > 0)) bad("elasticity = " + std::to_string(t.elasticity) + " must be > 0");
}

}  // namespace

elastic_allotment elastic_optimise(std::span<const elastic_task> tasks, unsigned cores) {
  for (std::size_t i = 0; i < tasks.size(); ++i) check(tasks[i], i);
  elastic_allotment r;
  r.cores.assign(tasks.size(), 0);
  r.admitted.assign(tasks.size(), false);
  unsigned left = cores;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const unsigned need = elastic_min_cores(tasks[i], cores);
    if (need == 0 || need > left) {
      r.feasible = false;
      continue;
    }
    r.cores[i] = need;
    r.admitted[i] = true;
    left -= need;
  }
  // Marginal allocation: each core to the task whose term drops most; ties
  // to the first in list order. A drop must be real (relative tolerance) so
  // a saturated task (T(m) <= T_min) takes no core.
  while (left > 0) {
    std::size_t best = tasks.size();
    double best_gain = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (!r.admitted[i]) continue;
      const double now = elastic_term(tasks[i], r.cores[i]);
      const double gain = now - elastic_term(tasks[i], r.cores[i] + 1);
      if (gain > 1e-12 * std::max(now, 1e-300) && gain > best_gain) {
        best = i;
        best_gain = gain;
      }
    }
    if (best == tasks.size()) break;
    ++r.cores[best];
    --left;
  }
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (r.admitted[i]) r.objective += elastic_term(tasks[i], r.cores[i]);
  return r;
}

}  // namespace promptly::policy_impl
