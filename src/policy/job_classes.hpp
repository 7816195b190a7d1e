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
//  * Held cores (below) change which core serves which pool, never how
//    many cores a pool gets: pin_held_cores and cores_for_counts take every
//    placement out of the policy's counts.
//
// Held cores. A core inside a strand of pool S cannot leave before the
// strand reaches a boundary (spawn, sync, future create or get, yield()):
// a decision that gives it to pool P changes its assignment only. A strand
// that never reaches one (a long loop) holds the core at S while the policy
// counts it as P's, and keeping each core where it was assigned keeps it
// P's at every later decision: nothing serves P, though every core not
// held could move there. The view shows it at a quantum tick: P is stalled
// (work queued for a whole quantum and none of its tasks started) while a
// core assigned to P still serves another pool S that has work. The job
// policies count such a core where it is: at S if S's count has room (S
// keeps its share, and a core free to move takes P's), else at the least
// urgent pool served after P (that pool, not the more urgent P, waits for
// the strand). So every job policy checks at quantum ticks, equi and
// elastic too (held_core_quantum), and a core held by a strand delays at
// most the pool the policy's own order puts last.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <unordered_map>
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
// pools() is allotted 0. Held cores are given explicitly where
// pin_held_cores pins them, out of the counts.
void allot_counts(ext::decision& d, std::span<const ext::pool_view> pools, std::span<const unsigned> counts);

// The quantum of the job policies that need none for their own rule (equi,
// drep, elastic): ticks only find held cores. Ticks run only while two
// pools have work (ext/policy.hpp), and a held core is found at the second
// tick after the decision that assigned it (a stall spans a whole quantum),
// so a pool waits at most about 20 ms for a core free to move.
inline constexpr std::chrono::microseconds held_core_quantum{10'000};

// One core assigned to a stalled pool while it serves another with work.
struct held_core {
  unsigned core = 0;
  ext::pool_id assigned = ext::no_pool;  // P: the stalled pool the core was given
  ext::pool_id holder = ext::no_pool;    // S: the pool whose strand holds it
};
// The held cores of the view (none except at quantum ticks: only ticks say
// stalled). Costs a look-up per core.
std::vector<held_core> held_cores(const ext::decision& d);
// True for a quantum event that finds no held core: a policy whose ticks
// only find held cores decides nothing on it (the cores stay as they are,
// and the tick costs a look-up per core, not a walk of the pools).
bool tick_without_held_cores(const ext::event& ev, const ext::decision& d);

// Pins each held core to a pool of `order` (pool ids in the policy's order
// of service, most urgent first; counts[i] cores for order[i]), taking the
// pin out of `counts`: to its holder if the holder has a count left, else
// to the last pool after its assigned pool that has one; a core whose
// assigned pool gets no core now, or that finds no such pool, is not
// pinned. Returns one entry per core of the view: its pin, or no_pool.
std::vector<ext::pool_id> pin_held_cores(const ext::decision& d, std::span<const ext::pool_id> order,
                                         std::span<unsigned> counts);

// One pool per core for `counts` (parallel to `order`), as decision::allot
// maps counts: a pinned core keeps its pin (already out of counts), every
// other core keeps current[c] while that pool has a count left, then the
// rest fill the pools in order. Cores left over get no_pool.
std::vector<ext::pool_id> cores_for_counts(std::span<const ext::pool_id> current, std::vector<ext::pool_id> pinned,
                                           std::span<const ext::pool_id> order, std::span<unsigned> counts);

// Each pool's work since it got work, for a policy with quantum ticks:
// pool_view::work_s counts only since the previous tick. At each quantum
// event the view of every pool with work is folded into the sum; at other
// events a pool's work is the folded sum plus its view's. Events of one
// decision share its view, so after a quantum event the same decision's
// further events must not add the view again: the ledger remembers the
// folded view (its address; a later decision whose view happens to sit at
// the same address undercounts one decision's work, never the folded sum).
// A pool without work at a tick is no job: its quantum is not folded.
class work_ledger {
 public:
  // Call first in every on_event, with the event and its decision.
  void note(const ext::event& ev, const ext::decision& d);
  // Worker-seconds pool v (of the decision passed to note) worked.
  double done_s(const ext::pool_view& v) const;

 private:
  std::unordered_map<ext::pool_id, double> folded_s_;  // by pool: work folded at ticks
  const ext::pool_view* tick_view_ = nullptr;          // the view the last quantum event folded
  bool view_folded_ = false;                           // the current decision's view is in folded_s_
};

// The most urgent rank among pools with ready work, or false if none has any.
bool most_urgent_rank(std::span<const ext::pool_view> pools, unsigned& rank) noexcept;

}  // namespace promptly::policy_impl
