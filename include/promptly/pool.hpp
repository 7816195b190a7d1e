// Pools: the one scheduling abstraction. A pool is a set of ready work with
// its own per-worker deques, injection queue and statistics; the policy
// decides which pools the workers serve. Priority levels are pools with a
// fixed rank (level l is pool l, rank l, never removed). Pools made at run
// time (one per job of a job server, one per tenant) come and go:
//
//   promptly::pool job = rt.create_pool({.rank = 2, .weight = 3});
//   auto f = rt.submit(job, work);          // runs in `job`; what it spawns stays there
//   f.get();
//   rt.remove_pool(job);                    // waits for the pool's counted work, then removes it
//
// Workers steal only from workers serving the same pool. docs/policies.md
// explains how policies see pools and give them cores.
#pragma once

#include <cstdint>
#include <optional>

#include "promptly/level.hpp"

namespace promptly {

struct pool {
  std::uint32_t id = 0;
  constexpr pool() noexcept = default;
  constexpr explicit pool(std::uint32_t i) noexcept : id(i) {}
  // Level l is pool l.
  constexpr pool(level l) noexcept : id(l.value) {}  // NOLINT(google-explicit-constructor): a level is a pool
  friend bool operator==(pool, pool) = default;
};

// A job's elastic real-time parameters (AMCilk, Sec. 6.2, after the elastic
// task model of Buttazzo et al.): with m cores one instance takes
// T(m) = (work - span) / m + span; its period may stretch from period_min
// to period_max, and elasticity says how willingly (larger = stretches
// first). The `elastic` policy allots cores from them; others ignore them.
struct elastic_params {
  double work_ms = 0;        // C: total work of one instance, > 0
  double span_ms = 0;        // L: its critical path, 0 < L <= C
  double period_min_ms = 0;  // T_min > 0
  double period_max_ms = 0;  // T_max >= T_min
  double elasticity = 1;     // E > 0
};

// Throws std::invalid_argument naming the first field that breaks the
// constraints above (create_pool and the job server check with it).
void validate(const elastic_params& e);

struct pool_options {
  // 0 = most urgent. Levels have rank = level; among pools of equal rank the
  // older comes first. Rank-ordered policies (prompt, aps) use it.
  unsigned rank = 0;
  // Share weight for weight-based policies (fair): the pool's share is its
  // weight over the sum of the weights of all pools. Must be >= 0.
  double weight = 1;
  // For the elastic policy; create_pool throws std::invalid_argument naming
  // the field that breaks the constraints above.
  std::optional<elastic_params> elastic{};
};

}  // namespace promptly
