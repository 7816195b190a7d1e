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

struct pool_options {
  // 0 = most urgent. Levels have rank = level; among pools of equal rank the
  // older comes first. Rank-ordered policies (prompt, aps) use it.
  unsigned rank = 0;
  // Share weight for weight-based policies (fair): the pool's share is its
  // weight over the sum of the weights of all pools. Must be >= 0.
  double weight = 1;
};

}  // namespace promptly
