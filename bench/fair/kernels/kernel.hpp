// The common interface of the compute kernels of the fairly prompt paper Sec. 6.2.2 (Fib, UTS, Strassen DMM,
// BFS, sample sort), their size presets, and the hashing every kernel uses for inputs and
// checksums. Header-only; see bench/fair/README.md.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fair_kernels {

class kernel {
public:
    virtual ~kernel() = default;
    virtual std::string_view name() const noexcept = 0;
    // Parallel run; call it on a Promptly worker (inside rt.run). Repeatable: every call does the
    // full work again on the same prepared input and returns the checksum.
    virtual std::uint64_t run() = 0;
    // The same computation serially on the calling thread (no runtime); same checksum.
    virtual std::uint64_t run_serial() = 0;
};

// Size presets: `full` takes about 1-1.5 s alone on 2 workers here, `quick` about 0.1-0.2 s,
// `test` a few ms (the measured times are in bench/fair/README.md).
enum class scale { test, quick, full };

inline scale parse_scale(std::string_view s) {
    if (s == "full") return scale::full;
    if (s == "quick") return scale::quick;
    if (s == "test") return scale::test;
    throw std::invalid_argument("unknown kernel scale '" + std::string(s) + "' (full, quick, test)");
}

// Picks the preset of a scale: pick(s, test, quick, full).
template <class T>
constexpr T pick(scale s, T test, T quick, T full) {
    return s == scale::full ? full : s == scale::quick ? quick : test;
}

// splitmix64's finaliser: a bijective mix. Inputs are generated as mix(seed + index), so any
// element can be produced independently (in parallel or not) and the input never depends on
// the order of generation; checksums sum mix(value + position) so they are order-independent to
// compute (a parallel reduction) yet position-dependent (a misplaced element changes them).
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// A uniform double in [0, 1) from a hash.
constexpr double unit(std::uint64_t h) noexcept { return double(h >> 11) * 0x1.0p-53; }

}  // namespace fair_kernels
