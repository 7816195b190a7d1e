// How a worker walks its ranked set of pools (assignment.hpp): which pool it
// serves at its loop top, which pools it may take work from while out of
// work, and whether it belongs further up its set. One definition, used by
// the scheduling loop (scheduling_loop.cpp), the policy thread
// (policy_driver.cpp) and the simulator (src/sim/engine.cpp), so the
// simulator runs the runtime's rules rather than a copy of them.
//
// The rules see a pool only through `ready(id)`: does pool `id` have ready
// work (queued, or running on a worker: pool_record::has_ready_work)? That is
// what "has work" means to the policies, so a pool whose workers run work
// that keeps spawning keeps the cores ranked to it even at an instant when it
// has nothing to steal (src/sched/README.md, "Assignments").
//
// Invariants (tests/set_walk_test.cpp checks them case by case)
//  * A ranked set is a priority order: a worker takes work only from the
//    pools up to and including the first with ready work, and serves a pool
//    ranked below one with ready work only until its next walk.
//  * The walks read each pool's `ready` at most once, most urgent first, and
//    stop at the first pool that decides the answer: they run at every loop
//    top and every fourth strand boundary of a donated worker, and each
//    `ready` reads another core's cache line.
//  * An empty (asleep) set serves no pool; a worker serving every pool stays
//    where it is (the set has no order to walk).
#pragma once

#include <cstdint>

#include "assignment.hpp"

namespace promptly::detail::set_walk {

// How many pools of ranked set `s` a worker takes work from now: those up to
// and including the first with ready work (all of them if none has any).
// It takes work from a less urgent pool of its set only while every more
// urgent one is idle: it donates itself, it does not wander. 0 for an empty
// or every-pool set (the caller takes from every pool).
template <class Ready>
std::uint8_t pools_to_take_from(const pool_set& s, Ready&& ready) noexcept {
  if (s.count < 2) return s.count;  // an empty or every-pool set has count 0
  for (std::uint8_t i = 0; i + 1 < s.count; ++i)
    if (ready(s.ids[i])) return static_cast<std::uint8_t>(i + 1);
  return s.count;
}

// True when `pool` is in ranked set `s` and a pool ranked above it has ready
// work: a worker serving `pool` with that set belongs further up.
template <class Ready>
bool ready_work_ranked_above(const pool_set& s, std::uint32_t pool, Ready&& ready) noexcept {
  if (s.what != pool_set::kind::pools) return false;
  for (std::uint8_t i = 0; i < s.count && s.ids[i] != pool; ++i)
    if (ready(s.ids[i])) return s.contains(pool);
  return false;
}

// The pool a worker serving `serving` with set `s` should serve now: no_pool
// if the set is empty (it sleeps); `serving` if the set is every pool; else,
// walking the ranked set, the first pool ranked above `serving` that has
// ready work, else `serving`, and the set's most urgent pool if `serving` is
// not in the set. Running work counts (above): else a core would leave at
// every instant its pool has nothing to steal and be back at its next strand
// boundary.
template <class Ready>
std::uint32_t pool_to_serve(const pool_set& s, std::uint32_t serving, Ready&& ready) noexcept {
  if (s.every()) return serving;
  for (std::uint8_t i = 0; i < s.count; ++i) {
    const std::uint32_t id = s.ids[i];
    if (id == serving || ready(id)) return id;
  }
  return s.first();  // no_pool when asleep
}

}  // namespace promptly::detail::set_walk
