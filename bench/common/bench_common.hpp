// Shared plumbing for the C++ workload programs of bench/ (protocol: bench/README.md).
//
// A workload program parses its parameters with `bench::args`, times its measured region with
// `bench::measure` (W warm-up repetitions, then R timed ones, all in this process), and ends by
// printing exactly one line: `RESULT {"result": ..., "metrics": {...}}`. Everything here is
// runtime-agnostic, so that Promptly and its C++ peers are timed by the same code.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// Command line of the form `--key value` or `--key=value`. Every key must be consumed by a
// get_*() call before `finish()`; an unknown key is an error (a typo must not silently become a
// default).
class args {
public:
    args(int argc, char** argv) {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            if (a.rfind("--", 0) != 0) fail("unexpected argument '" + a + "'");
            a = a.substr(2);
            if (auto eq = a.find('='); eq != std::string::npos) {
                kv_[a.substr(0, eq)] = a.substr(eq + 1);
            } else {
                if (i + 1 >= argc) fail("missing value for --" + a);
                kv_[a] = argv[++i];
            }
        }
    }

    long get_long(const std::string& key, long def) {
        auto it = kv_.find(key);
        if (it == kv_.end()) return def;
        char* end = nullptr;
        long v = std::strtol(it->second.c_str(), &end, 10);
        if (end == it->second.c_str() || *end != '\0') fail("--" + key + " needs an integer");
        used_.push_back(key);
        return v;
    }

    std::string get_string(const std::string& key, const std::string& def) {
        auto it = kv_.find(key);
        if (it == kv_.end()) return def;
        used_.push_back(key);
        return it->second;
    }

    // Rejects keys no get_*() asked for.
    void finish() const {
        for (const auto& [k, v] : kv_)
            if (std::find(used_.begin(), used_.end(), k) == used_.end()) fail("unknown option --" + k);
    }

    [[noreturn]] static void fail(const std::string& msg) {
        std::fprintf(stderr, "error: %s\n", msg.c_str());
        std::exit(2);
    }

private:
    std::map<std::string, std::string> kv_;
    std::vector<std::string> used_;
};

// Keeps the optimiser from treating `v` as known (inputs) or unused (outputs), so a pure
// function called with the same argument in every repetition is really recomputed.
// The serial leaf of every fib workload (all runtimes and suites), so that their
// leaves compile to the same code.
inline long fib_serial(long n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

template <class T>
inline void opaque(T& v) {
    asm volatile("" : "+r"(v) : : "memory");
}

inline double cpu_seconds_self() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct region_stats {
    double region_s;      // median wall time of the timed repetitions
    double region_s_min;  // fastest timed repetition
    double run_util;      // median of (process user+sys CPU during a repetition) / its wall time
};

// Runs `fn` warmup + reps times; times each of the last `reps` calls. Every call must return
// the same answer (a runtime that computes different answers across repetitions is broken).
template <class F>
auto measure(long warmup, long reps, F&& fn) -> std::pair<decltype(fn()), region_stats> {
    using clock = std::chrono::steady_clock;
    if (reps < 1) args::fail("--reps must be >= 1");
    decltype(fn()) answer{};
    std::vector<double> walls, utils;
    for (long i = 0; i < warmup + reps; ++i) {
        double c0 = cpu_seconds_self();
        auto t0 = clock::now();
        auto r = fn();
        auto t1 = clock::now();
        double c1 = cpu_seconds_self();
        if (i > 0 && !(r == answer)) args::fail("answer changed between repetitions");
        answer = r;
        if (i < warmup) continue;
        double wall = std::chrono::duration<double>(t1 - t0).count();
        walls.push_back(wall);
        utils.push_back(wall > 0 ? (c1 - c0) / wall : 0.0);
    }
    region_stats s{median(walls), *std::min_element(walls.begin(), walls.end()), median(utils)};
    return {answer, s};
}

// Prints the protocol's final line. `result` is printed verbatim as a JSON value.
inline void print_result(const std::string& result_json, const region_stats& s,
                         const std::vector<std::pair<std::string, double>>& extra = {}) {
    std::printf("RESULT {\"result\": %s, \"metrics\": {\"region_s\": %.9g, \"region_s_min\": %.9g, "
                "\"run_util\": %.4g",
                result_json.c_str(), s.region_s, s.region_s_min, s.run_util);
    for (const auto& [k, v] : extra) std::printf(", \"%s\": %.9g", k.c_str(), v);
    std::printf("}}\n");
    std::fflush(stdout);
}

}  // namespace bench
