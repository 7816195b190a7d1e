// The two reductions of the `core` suite's reduce benches, shared by every runtime's program so
// that their per-element code is the same:
//
//   sum  the sum (mod 2^64) of a vector of n uint32 values, a[i] = i % 1000: memory-bound, one
//        load and one add per element (10^8 elements = 400 MB, far beyond any cache);
//   map  the sum (mod 2^64) of mix(i) over i in [0, n), where mix is `rounds` steps of a
//        64-bit multiply-xorshift hash: compute-bound, no memory traffic.
//
// A program builds the input once (outside the timed region, pages touched), then times the
// reduction with bench::measure. --kind sum|map, --n, --rounds (map only), --grain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace bench {

// One step of SplitMix64's output function (Steele, Lea, Flood 2014): a bijection on 64 bits.
inline std::uint64_t mix_step(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

struct reduction {
    std::string kind;  // "sum" or "map"
    std::size_t n;
    int rounds;
    std::size_t grain;
    std::vector<std::uint32_t> data;  // kind == "sum" only

    explicit reduction(args& a)
        : kind(a.get_string("kind", "sum")),
          n(std::size_t(a.get_long("n", 100'000'000))),
          rounds(int(a.get_long("rounds", 16))),
          grain(std::size_t(a.get_long("grain", 16'384))) {
        if (kind != "sum" && kind != "map") args::fail("--kind must be sum or map");
        if (grain == 0) args::fail("--grain must be >= 1");
        if (kind == "sum") {
            data.resize(n);
            for (std::size_t i = 0; i < n; ++i) data[i] = std::uint32_t(i % 1000);
        }
    }

    // The element the reduction adds at index i (the `map` of parallel_reduce).
    std::uint64_t element_sum(std::size_t i) const noexcept { return data[i]; }
    std::uint64_t element_map(std::size_t i) const noexcept {
        std::uint64_t z = i;
        for (int r = 0; r < rounds; ++r) z = mix_step(z);
        return z;
    }
};

}  // namespace bench
