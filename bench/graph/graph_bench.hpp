// Shared pieces of suite `graph` (the Taskflow executor paper Sec. III-A's micro-benchmarks): timing of the
// build / run / destroy phases of one repetition, the random DAG every runtime builds, and the
// matrix-multiplication kernels. Runtime-agnostic, so Promptly and oneTBB are measured by the
// same code; the protocol is bench/README.md's.
//
// One repetition = build a fresh graph, run it once, destroy it (as Taskflow's benchmarks do).
// Metrics, each the median over the timed repetitions:
//   build_s    constructing the graph's tasks and edges
//   region_s   the run: from starting it until the caller has seen it finish
//   destroy_s  destroying the graph
//   total_s    build_s + region_s + destroy_s of the same repetition
//   run_util   process user+sys CPU during the run / the run's wall time (getrusage)
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"

namespace bench::graph {

// Marks the phase boundaries of one repetition. The repetition function calls start(), built(),
// ran(), destroyed() in this order.
class phase_timer {
public:
    using clock = std::chrono::steady_clock;
    void start() { t0_ = clock::now(); }
    void built() {
        t1_ = clock::now();
        cpu1_ = cpu_seconds_self();
    }
    void ran() {
        cpu2_ = cpu_seconds_self();
        t2_ = clock::now();
    }
    void destroyed() { t3_ = clock::now(); }

    double build_s() const { return secs(t0_, t1_); }
    double run_s() const { return secs(t1_, t2_); }
    double destroy_s() const { return secs(t2_, t3_); }
    double run_util() const { return run_s() > 0 ? (cpu2_ - cpu1_) / run_s() : 0.0; }

private:
    static double secs(clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
    clock::time_point t0_, t1_, t2_, t3_;
    double cpu1_ = 0, cpu2_ = 0;
};

// Runs rep(timer) warmup + reps times; each call returns the answer it computed (all must be
// equal) and marks its phases. Prints the protocol's RESULT line.
template <class Rep>
void run_and_report(long warmup, long reps, Rep&& rep) {
    if (reps < 1) args::fail("--reps must be >= 1");
    std::vector<double> build, run, destroy, total, util;
    long long answer = 0;
    for (long i = 0; i < warmup + reps; ++i) {
        phase_timer t;
        long long r = rep(t);
        if (i > 0 && r != answer) args::fail("answer changed between repetitions");
        answer = r;
        if (i < warmup) continue;
        build.push_back(t.build_s());
        run.push_back(t.run_s());
        destroy.push_back(t.destroy_s());
        total.push_back(t.build_s() + t.run_s() + t.destroy_s());
        util.push_back(t.run_util());
    }
    region_stats s{median(run), *std::min_element(run.begin(), run.end()), median(util)};
    print_result(std::to_string(answer), s,
                 {{"build_s", median(build)}, {"destroy_s", median(destroy)}, {"total_s", median(total)}});
}

// The random DAG of bench graph-random, as successor lists (CSR): every runtime builds the same
// graph. Task i gets 1..4 successors drawn from the next `window` tasks, skipping those that
// already have 4 predecessors, so in- and out-degree are <= 4 (the Taskflow executor paper Sec. III-A: "the
// degree of each node ... is bounded by four"). Edges go from lower to higher ids.
struct random_dag {
    std::vector<std::uint32_t> offset;  // successors of i: succ[offset[i] .. offset[i+1])
    std::vector<std::uint32_t> succ;

    random_dag(std::uint32_t n, std::uint64_t seed, std::uint32_t window = 64) : offset(n + 1, 0) {
        std::vector<std::uint8_t> in(n, 0);
        std::uint64_t s = seed;
        auto next = [&s] {  // splitmix64: fast and identical everywhere
            std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
            return z ^ (z >> 31);
        };
        succ.reserve(std::size_t(n) * 5 / 2);
        for (std::uint32_t i = 0; i < n; ++i) {
            offset[i] = std::uint32_t(succ.size());
            const std::uint32_t later = n - 1 - i;
            if (later == 0) continue;
            const std::uint32_t span = std::min(window, later);
            const std::uint32_t want = 1 + std::uint32_t(next() % 4);
            for (std::uint32_t k = 0; k < want; ++k) {
                for (int attempt = 0; attempt < 4; ++attempt) {
                    const std::uint32_t j = i + 1 + std::uint32_t(next() % span);
                    if (in[j] >= 4) continue;
                    if (std::find(succ.begin() + offset[i], succ.end(), j) != succ.end()) continue;
                    succ.push_back(j);
                    ++in[j];
                    break;
                }
            }
        }
        offset[n] = std::uint32_t(succ.size());
    }
};

// Matrix multiplication of bench graph-matmul: row i of A, B and C is initialised by one task,
// row i of C = A * B is computed by another after every row is initialised. Integer-valued
// doubles, so every order of summation gives the exact same C.
struct matrices {
    explicit matrices(long n) : n(n), a(std::size_t(n * n)), b(std::size_t(n * n)), c(std::size_t(n * n)) {}

    void init_row(long i) {
        double* ai = &a[std::size_t(i * n)];
        double* bi = &b[std::size_t(i * n)];
        double* ci = &c[std::size_t(i * n)];
        for (long j = 0; j < n; ++j) {
            ai[j] = double((i + j) % 7 - 3);
            bi[j] = double((i * j) % 5 - 2);
            ci[j] = 0.0;
        }
    }
    void multiply_row(long i) {
        double* ci = &c[std::size_t(i * n)];
        const double* ai = &a[std::size_t(i * n)];
        for (long k = 0; k < n; ++k) {
            const double aik = ai[k];
            const double* bk = &b[std::size_t(k * n)];
            for (long j = 0; j < n; ++j) ci[j] += aik * bk[j];
        }
    }
    // The answer: the sum of C's entries (each an exact integer).
    long long checksum() const {
        long long s = 0;
        for (double x : c) s += (long long)x;
        return s;
    }
    // Poisons C so that a repetition that skipped work cannot pass for a correct one.
    void poison() { std::fill(c.begin(), c.end(), -1.0); }

    long n;
    std::vector<double> a, b, c;
};

}  // namespace bench::graph
