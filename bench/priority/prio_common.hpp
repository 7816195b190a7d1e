// Helpers shared by the C++ programs of suite `priority` (bench/priority/): option parsing of
// real numbers, percentiles, a sharded progress counter and the deterministic spin work of the
// interactive jobs. Runtime-agnostic: Promptly, oneTBB and the std::thread peer use the same
// code, and bench/go/priolatency/main.go mirrors spin() and the counter bit for bit.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace prio {

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point t0, clock::time_point t1) {
    return std::chrono::duration<double>(t1 - t0).count();
}

inline double get_double(bench::args& a, const std::string& key, double def) {
    std::string s = a.get_string(key, "");
    if (s.empty()) return def;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') bench::args::fail("--" + key + " needs a number");
    return v;
}

// A 0/1 option (`--key 1`); anything else is an error naming the option.
inline bool get_flag01(bench::args& a, const std::string& key) {
    long v = a.get_long(key, 0);
    if (v != 0 && v != 1) bench::args::fail("--" + key + " must be 0 or 1, got " + std::to_string(v));
    return v == 1;
}

// Nearest-rank percentile (p in [0, 100]) of an unsorted sample.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    std::size_t k = std::size_t(std::ceil(p / 100.0 * double(v.size())));
    return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

// ---- fib --------------------------------------------------------------------------------------

inline long fib_value(long n) {  // iterative, for checking answers
    long a = 0, b = 1;
    for (long i = 0; i < n; ++i) {
        long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

// ---- background progress --------------------------------------------------------------------

// Completed serial leaves of the background fib, in 64 cache-line-sized shards indexed by the
// leaf's position in the call tree (so two workers rarely touch the same line). Read by the
// sampling thread with relaxed loads; the sum is monotonic up to in-flight increments.
struct progress_counter {
    struct alignas(64) shard {
        std::atomic<std::uint64_t> v{0};
    };
    shard shards[64];
    void add(std::uint64_t where) { shards[where & 63].v.fetch_add(1, std::memory_order_relaxed); }
    std::uint64_t total() const {
        std::uint64_t s = 0;
        for (const auto& x : shards) s += x.v.load(std::memory_order_relaxed);
        return s;
    }
};

// ---- interactive job work ---------------------------------------------------------------------

// A dependent chain of `iters` multiply-xorshift steps: busy work the compiler cannot shorten,
// with a result that depends on the seed (the checksum proves the work was done). Go mirrors it.
inline std::uint64_t spin(std::uint64_t seed, long iters) {
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (long i = 0; i < iters; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        x ^= x >> 29;
    }
    return x;
}

// The value of interactive job `j` (root part + 4 subtasks), computed serially: what every
// runtime's job must return.
inline std::uint64_t job_value_serial(std::uint64_t j, long root_iters, long sub_iters) {
    std::uint64_t v = spin(j * 5, root_iters);
    for (std::uint64_t k = 1; k <= 4; ++k) v += spin(j * 5 + k, sub_iters);
    return v;
}

}  // namespace prio
