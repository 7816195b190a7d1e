// Fairly prompt scheduling ("Fairness in Responsive Parallelism", ICFP 2019,
// Sec. 3-4): the pure parts of the `fair` policy, so that every rule is
// table-tested (tests/fair_policy_test.cpp). Pools are in rank order (most
// urgent first); every span below is indexed by that position. A pool's
// share F(p) is its weight over the sum of the live pools' weights (levels
// take the criterion's weights, runtime::set_fairness).
//
// The policy (fair.cpp) runs rounds of roundQuantum. At the start of each
// round every worker draws a primary pool from the fairness criterion F;
// during the round it works at its primary pool while that pool has work and
// donates its cycles to the most urgent pool with work otherwise (Sec. 3.1, second property; Sec. 4.2, Fig. 2 lines 28-30).
// A worker's assignment is the ranked set {primary, donation target}: it
// donates itself the moment its primary runs out of work and comes back as
// soon as the primary has work again, without waiting for a decision (the
// runtime walks the set at each loop iteration, as the paper's processor
// tries its primary at each iteration); decisions only redraw primaries and
// move the donation target.
//
// Two choices of ours (fair_params::sampling = systematic, the default),
// both keeping the paper's guarantee (each pool p gets an expected share F(p)
// of the worker-rounds while it has work, so a computation at p is stretched
// by at most 1/F(p)):
//
//  1. Systematic sampling. The P draws of a round are one uniform u and the
//     points (u + i) / P, i = 0..P-1, looked up in F's cumulative
//     distribution. Each draw is still uniform, so every worker draws pool p
//     with probability exactly F(p), as in the paper; but a round's counts
//     are floor(F(p) P) or ceil(F(p) P) instead of a multinomial. With P = 2
//     and F = 50-25-25 the top pool has a primary worker in every round
//     instead of in 3 rounds of 4: that is what keeps an interactive level's
//     response time low on a machine with few workers, where the paper (70
//     workers) relied on numbers.
//
//  2. Credit for under-served pools. Sampling alone gives a pool with a small
//     share F(p) P << 1 a primary worker only once every 1 / (F(p) P) rounds
//     (Sec. 4.5 notes the same problem for pools with one thread):
//     with F = 5-45-50 on 2 workers an echo would wait up to 10 rounds
//     (50 ms). So each pool also accrues credit, F(p) P worker-seconds per
//     second, spent by the time its tasks actually run, capped at one round of
//     one worker (and at -100 rounds: over-service is remembered). A pool with work, no worker and positive credit
//     takes one worker, first from the workers donated to another pool, else
//     from the pool with the least credit if that is below its own. Every
//     worker such a claim takes is paid from the claimer's credit, so over
//     any interval T a pool receives at most F(p) P T + one round through
//     claims: the bound on everybody else's stretch changes by at most one
//     round per interval, while an interactive pool (little work, credit at
//     the cap) is served within one decision instead of up to 1 / (F(p) P)
//     rounds.
//
// Winner-take-all is F(top) = 1: every draw is the top pool, nothing else has
// credit, and the allotment is exactly the `prompt` policy's.
//
// fair_params::sampling = independent is the paper's rule instead of both
// choices (Sec. 4.2, Fig. 2 lines 18-20 and 28-30): each worker has its own
// rounds, draws its own primary pool at each of its round boundaries with
// probability F(p), independently of the other workers, works there while
// it has work and otherwise donates itself to the most urgent pool with
// work. No credit claims: a pool with a small share waits for a worker to
// draw it. The policy thread ticks every independent_tick(round, P) so that
// each worker's boundary is honoured within one tick; the workers' first
// rounds are staggered (worker c's lasts (c + 1) / P rounds) and each keeps
// its phase, so about P / round boundaries fall per unit of time, one per
// tick, as with the paper's unsynchronised processors.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {

// Systematic sampling of one round's primaries: primaries[p] = how many of
// the `workers` points (u + i) / workers fall in pool p's interval of the
// cumulative distribution of `shares`. u in [0, 1). Pools with share 0 are
// never drawn. Sum of primaries = workers.
void sample_primaries(std::span<const double> shares, unsigned workers, double u,
                      std::span<unsigned> primaries) noexcept;

// The allotment for the round's primaries: each pool with work keeps its
// primaries; the primaries of pools without work are donated to the most
// urgent pool with work; then credit claims (choice 2 above), most urgent
// pool first. With no work anywhere, every worker goes to pool 0 (asleep).
void allot_fair(std::span<const unsigned> primaries, std::span<const double> credit_s,
                std::span<const ext::pool_view> stats, unsigned workers, std::span<unsigned> allotment);

// allot_fair on the pools with work only, most urgent first (the rule
// gives cores to no other pool): their primaries and credit, and
// `idle_primaries`, the round's primaries at pools without work, which go
// to the first (the donation). Costs the pools with work, not the pool
// count. `primaries` must not be empty.
void allot_fair_with_work(std::span<const unsigned> primaries, std::span<const double> credit_s,
                          unsigned idle_primaries, std::span<unsigned> allotment) noexcept;

// One worker's draw (independent sampling): the pool whose interval of the
// cumulative distribution of `shares` holds u, u in [0, 1). Pools with share
// 0 are never drawn; rounding past the last bound gives the last positive
// pool. `shares` must not be empty.
std::size_t draw_primary(std::span<const double> shares, double u) noexcept;

// Independent sampling's sets, per worker (pool ids): its primary, then the
// most urgent pool with ready work (the first of `with_work`, the view's
// pools with work in rank order) when that is another pool (its donation
// target). The worker works at its primary while it has work and at the
// donation target otherwise (Fig. 2 lines 28-30), by itself between
// decisions: the runtime's walk of a ranked set does the rest.
std::vector<std::vector<ext::pool_id>> independent_sets(std::span<const ext::pool_id> primary,
                                                        std::span<const ext::pool_view> with_work);

// The quantum of independent sampling: round / workers, so that one of the
// workers' staggered boundaries falls in each tick, but not below 1 ms (the
// fairly prompt paper's implementation checks at 1 ms for 5 ms rounds, Sec.
// 5.2) unless the round itself is shorter.
std::chrono::microseconds independent_tick(std::chrono::microseconds round, unsigned workers) noexcept;

// The `fair` policy with its random numbers and clock given (tests: a fixed
// seed and a clock they advance). make_policy("fair") uses a random seed and
// steady_clock.
std::unique_ptr<ext::policy> make_fair_policy_with(const ext::fair_params& p, std::uint64_t seed,
                                                   std::function<std::chrono::steady_clock::time_point()> now);

}  // namespace promptly::policy_impl
