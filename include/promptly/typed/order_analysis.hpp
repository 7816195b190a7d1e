// Linearising a declared priority order: one constexpr algorithm shared by
// the compile-time order (priority_order) and the run-time one
// (dynamic_priority_order).
//
// Input: n priorities 0..n-1 in declaration order and edges (a, b) meaning
// "a is more urgent than b" ("Responsive Parallelism with Futures and
// State", PLDI 2020, Sec. 2.1 writes b < a; "Fairness in Responsive
// Parallelism", ICFP 2019, Sec. 2.1 writes b ≺ a). Output:
//  * level[p]: p's position in a topological order (the fairly prompt paper,
//    footnote 1:
//    "a total order on priorities consistent with the partial order"); Kahn's
//    algorithm, always taking the ready priority declared first, so a total
//    order keeps its declaration order and ties are stable;
//  * reach[a] bit b: a is at least as urgent as b (reflexive transitive
//    closure of the edges) - the relation rule TOUCH checks;
//  * cycle: when the edges have a cycle, the priorities on one, starting
//    with the one declared first, each declared more urgent than the next
//    and the last more urgent than the first; level and reach are then
//    meaningless.
//
// Invariants of a successful analysis (cycle_length == 0)
//  * level is a bijection onto 0..n-1 and at_level is its inverse;
//  * reach[a] bit b  implies  level[a] <= level[b]  (the linearisation never
//    puts a more urgent priority at a less urgent level).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>

namespace promptly::detail {

// Priorities an order may declare: one runtime level each (config.hpp's
// max_levels), and one bit each in a 64-bit reachability row.
inline constexpr unsigned max_priorities = 64;

using priority_edge = std::pair<unsigned, unsigned>;  // (more urgent, less urgent)

struct order_analysis {
  unsigned size = 0;
  std::array<unsigned, max_priorities> level{};
  std::array<unsigned, max_priorities> at_level{};
  std::array<std::uint64_t, max_priorities> reach{};
  unsigned cycle_length = 0;  // 0: acyclic
  std::array<unsigned, max_priorities> cycle{};

  constexpr bool at_least_as_urgent(unsigned a, unsigned b) const noexcept { return (reach[a] >> b) & 1u; }
};

// Requires n <= max_priorities and every edge endpoint < n.
constexpr order_analysis analyse_order(unsigned n, std::span<const priority_edge> edges) {
  order_analysis r;
  r.size = n;
  std::array<unsigned, max_priorities> indegree{};
  for (const auto& [a, b] : edges) ++indegree[b];

  // Kahn's algorithm, lowest declaration index first among the ready ones.
  std::array<bool, max_priorities> placed{};
  unsigned next_level = 0;
  for (; next_level < n; ++next_level) {
    unsigned pick = n;
    for (unsigned p = 0; p < n; ++p) {
      if (!placed[p] && indegree[p] == 0) {
        pick = p;
        break;
      }
    }
    if (pick == n) break;  // every unplaced priority has an unplaced predecessor: a cycle
    placed[pick] = true;
    r.level[pick] = next_level;
    r.at_level[next_level] = pick;
    for (const auto& [a, b] : edges)
      if (a == pick) --indegree[b];
  }

  if (next_level < n) {
    // Every unplaced priority has an incoming edge from an unplaced one, so
    // walking such edges backwards n times from any of them ends on a cycle.
    auto predecessor = [&](unsigned p) {
      for (const auto& [a, b] : edges)
        if (b == p && !placed[a]) return a;
      return p;  // unreachable: p is unplaced
    };
    unsigned on_cycle = 0;
    while (placed[on_cycle]) ++on_cycle;
    for (unsigned i = 0; i < n; ++i) on_cycle = predecessor(on_cycle);
    // Collect the cycle backwards, then reverse it into declaration direction.
    unsigned p = on_cycle;
    do {
      r.cycle[r.cycle_length++] = p;
      p = predecessor(p);
    } while (p != on_cycle);
    for (unsigned i = 0, j = r.cycle_length - 1; i < j; ++i, --j) std::swap(r.cycle[i], r.cycle[j]);
    // Start the report at the priority on the cycle declared first.
    unsigned first = 0;
    for (unsigned i = 1; i < r.cycle_length; ++i)
      if (r.cycle[i] < r.cycle[first]) first = i;
    std::array<unsigned, max_priorities> rotated{};
    for (unsigned i = 0; i < r.cycle_length; ++i) rotated[i] = r.cycle[(first + i) % r.cycle_length];
    r.cycle = rotated;
    return r;
  }

  // Reflexive transitive closure, from the least urgent level up: every
  // successor of p sits at a greater level, so its row is already complete.
  for (unsigned l = n; l-- > 0;) {
    const unsigned p = r.at_level[l];
    r.reach[p] = std::uint64_t{1} << p;
    for (const auto& [a, b] : edges)
      if (a == p) r.reach[p] |= r.reach[b];
  }
  return r;
}

}  // namespace promptly::detail
