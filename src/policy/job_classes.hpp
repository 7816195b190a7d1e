// What the job policies (equi, drep, asteal, elastic; docs/job-policies.md)
// share: the priority-class rule and the two ways of splitting cores they
// build on. Pure functions over a decision's pool list, so the rules are
// table-tested without a runtime (tests/job_policies_test.cpp).
//
// The class rule. A pool's class is its rank (the job server maps
// "interactive" to 0, "batch" to 1). Classes are served strictly in order:
// the most urgent class with work gets every core its pools can use under
// the policy's own rule, applied among the pools of that class only; the
// next class gets what is left, and so on. Pools without ready work are in
// no class: they get no core. Like levels under `prompt`, an urgent class
// that can use every core starves the classes after it until its work ends.
//
// Invariants
//  * serve_by_rank never hands out more than `cores` cores in total, and
//    gives a pool without ready work none.
//  * equal_split and deq return counts that sum to at most `cores`; whole
//    cores left after the even part go one each to the first pools of the
//    list (the oldest of a class: a decision lists pools by rank, then age).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {

// Splits `cores` evenly over `n` pools: each gets cores / n, and the first
// cores % n get one more. No cap: one pool alone gets every core.
std::vector<unsigned> equal_split(std::size_t n, unsigned cores);

// Dynamic equipartitioning of desires (DEQ; the OS allocator A-STEAL is
// analysed with: Agrawal, He, Hsu and Leiserson, "Adaptive work-stealing
// with parallelism feedback", TOCS 2008): pools whose desire is below the even
// share get their desire, and the cores they leave are split evenly among
// the others, repeated until every remaining pool desires at least the even
// share. Desires are whole cores here (callers pass floor(desire), at least
// 1). The result never exceeds a pool's desire; cores nobody desires stay
// unallotted (the sum may be below `cores`).
std::vector<unsigned> deq(std::span<const unsigned> desires, unsigned cores);

// The class rule above. `serve(members, left)` is the policy's rule for
// the pools with ready work of one class (indices into `pools`, in list
// order) given `left` cores; it returns one count per member (their sum
// must not exceed `left`; larger sums are cut from the last member back).
// Returns one count per pool of `pools`.
using class_rule = std::function<std::vector<unsigned>(std::span<const std::size_t> members, unsigned left)>;
std::vector<unsigned> serve_by_rank(std::span<const ext::pool_view> pools, unsigned cores, const class_rule& serve);

// Allots counts[i] cores to pools[i] (a policy's pools_with_work(), so the
// call costs what has work, not the pool count). Pools not named get none,
// and when nothing is named the first pool of the decision is named with 0
// so that this holds then too: every core sleeps, as when every pool of
// pools() is allotted 0.
void allot_counts(ext::decision& d, std::span<const ext::pool_view> pools, std::span<const unsigned> counts);

// The most urgent rank among pools with ready work, or false if none has any.
bool most_urgent_rank(std::span<const ext::pool_view> pools, unsigned& rank) noexcept;

}  // namespace promptly::policy_impl
