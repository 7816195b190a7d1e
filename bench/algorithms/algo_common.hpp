// Shared by every program of suite `algorithms` (bench/suites/algorithms.py): the inputs, the
// checksums that are each program's answer, and a timing loop whose setup runs outside the
// timed region.
//
// Inputs are generated from SplitMix64's output function (bench::mix_step) of the index, so the
// Rust peer (bench/rust/src/bin/sort.rs) builds exactly the same ones:
//   uniform     key[i] = low 32 bits of mix(i)
//   sorted      key[i] = i
//   reversed    key[i] = n - 1 - i
//   few-unique  key[i] = mix(i) % 16
//   strings     string i: 8 + mix(i) % 17 letters, letter j = 'a' + mix(i * 64 + j + 1) % 26
// Sorting works in place, so every repetition first copies the input into the working buffer
// (untimed; it also touches the buffer's pages), then times the sort alone.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/reduce_workload.hpp"  // bench::mix_step

namespace bench {

inline std::vector<std::uint32_t> sort_keys(const std::string& dist, std::size_t n) {
    std::vector<std::uint32_t> v(n);
    if (dist == "uniform") {
        for (std::size_t i = 0; i < n; ++i) v[i] = std::uint32_t(mix_step(i));
    } else if (dist == "sorted") {
        for (std::size_t i = 0; i < n; ++i) v[i] = std::uint32_t(i);
    } else if (dist == "reversed") {
        for (std::size_t i = 0; i < n; ++i) v[i] = std::uint32_t(n - 1 - i);
    } else if (dist == "few-unique") {
        for (std::size_t i = 0; i < n; ++i) v[i] = std::uint32_t(mix_step(i) % 16);
    } else {
        args::fail("--dist must be uniform, sorted, reversed, few-unique or strings");
    }
    return v;
}

inline std::vector<std::string> sort_strings(std::size_t n) {
    std::vector<std::string> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t len = 8 + mix_step(i) % 17;
        v[i].resize(len);
        for (std::size_t j = 0; j < len; ++j) v[i][j] = char('a' + mix_step(i * 64 + j + 1) % 26);
    }
    return v;
}

// The answers are 53-bit (exact in every JSON reader) checksums of the whole output, computed
// outside the timed region. A sort's output must be sorted; otherwise the program fails.
inline std::uint64_t checksum53(std::uint64_t h) { return h >> 11; }

template <class T>
inline void require_sorted(const std::vector<T>& v) {
    if (!std::is_sorted(v.begin(), v.end())) args::fail("output is not sorted");
}

inline std::uint64_t checksum_keys(const std::vector<std::uint32_t>& v) {
    require_sorted(v);
    std::uint64_t h = 0;
    for (std::size_t i = 0; i < v.size(); ++i) h += std::uint64_t(v[i]) * (i + 1);
    return checksum53(h);
}

inline std::uint64_t checksum_strings(const std::vector<std::string>& v) {
    require_sorted(v);
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the bytes, a 0 after each string
    for (const auto& s : v) {
        for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
        h = (h ^ 0) * 0x100000001b3ULL;
    }
    return checksum53(h);
}

template <class T>
inline std::uint64_t checksum_values(const std::vector<T>& v) {
    std::uint64_t h = 0;
    for (std::size_t i = 0; i < v.size(); ++i) h += std::uint64_t(v[i]) * (i + 1);
    return checksum53(h);
}

// bench::measure with an untimed setup before, and an untimed answer after, each repetition:
// setup(); t0; work(); t1; answer(). Returns the answer (equal in every repetition) and the
// timed repetitions' statistics.
template <class Setup, class Work, class Answer>
std::pair<std::uint64_t, region_stats> measure_region(long warmup, long reps, Setup&& setup, Work&& work,
                                                      Answer&& answer) {
    using clock = std::chrono::steady_clock;
    if (reps < 1) args::fail("--reps must be >= 1");
    std::uint64_t first = 0;
    std::vector<double> walls, utils;
    for (long i = 0; i < warmup + reps; ++i) {
        setup();
        double c0 = cpu_seconds_self();
        auto t0 = clock::now();
        work();
        auto t1 = clock::now();
        double c1 = cpu_seconds_self();
        std::uint64_t r = answer();
        if (i > 0 && r != first) args::fail("answer changed between repetitions");
        first = r;
        if (i < warmup) continue;
        double wall = std::chrono::duration<double>(t1 - t0).count();
        walls.push_back(wall);
        utils.push_back(wall > 0 ? (c1 - c0) / wall : 0.0);
    }
    return {first, {median(walls), *std::min_element(walls.begin(), walls.end()), median(utils)}};
}

// One sort bench: --dist (a key distribution or `strings`), --n, --stable 0|1; `sort_keys_fn`
// and `sort_strings_fn` sort a vector in place (stable or not, as the program chose).
struct sort_workload {
    std::string dist;
    std::size_t n;
    bool stable;
    explicit sort_workload(args& a)
        : dist(a.get_string("dist", "uniform")),
          n(std::size_t(a.get_long("n", 10'000'000))),
          stable(a.get_long("stable", 0) != 0) {}

    template <class SortKeys, class SortStrings>
    void run(long warmup, long reps, SortKeys&& sort_keys_fn, SortStrings&& sort_strings_fn) const {
        std::pair<std::uint64_t, region_stats> r;
        if (dist == "strings") {
            const auto input = sort_strings(n);
            std::vector<std::string> v;
            r = measure_region(warmup, reps, [&] { v = input; }, [&] { sort_strings_fn(v); },
                               [&] { return checksum_strings(v); });
        } else {
            const auto input = sort_keys(dist, n);
            std::vector<std::uint32_t> v(n);
            r = measure_region(warmup, reps, [&] { std::copy(input.begin(), input.end(), v.begin()); },
                               [&] { sort_keys_fn(v); }, [&] { return checksum_keys(v); });
        }
        print_result(std::to_string(r.first), r.second);
    }
};

// The scan bench: inclusive prefix sums of n int64 values in [0, 1000), into a second array.
struct scan_workload {
    std::size_t n;
    std::vector<std::int64_t> in, out;
    explicit scan_workload(args& a) : n(std::size_t(a.get_long("n", 100'000'000))) {}

    template <class Scan>
    void run(long warmup, long reps, Scan&& scan) {
        in.resize(n);
        out.assign(n, 0);
        for (std::size_t i = 0; i < n; ++i) in[i] = std::int64_t(mix_step(i) % 1000);
        auto r = measure_region(warmup, reps, [] {}, [&] { scan(in, out); },
                                [&] { return checksum_values(out); });
        print_result(std::to_string(r.first), r.second);
    }
};

}  // namespace bench
