// The work unit of the Bing-like synthetic job (AMCilk Sec. 5.1, 6.1): a dependent chain of
// integer arithmetic the compiler cannot fold, about 1 us on a 3 GHz core. Shared by the
// built-in `bing` program and the `jobs` benchmark suite's programs (Promptly and its C++
// peers), so that every runtime runs the same instructions per unit; the Go peer
// (bench/go/jobs) writes the same arithmetic in Go.
#pragma once

#include <cstdint>

namespace promptly::server::programs {

inline constexpr int bing_unit_rounds = 256;

// splitmix64's finaliser: draws a job's work from its seed.
constexpr std::uint64_t bing_mix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The value of unit i (its checksum contribution).
inline std::uint64_t bing_unit(std::uint64_t i) noexcept {
  std::uint64_t x = i | 1;
  for (int r = 0; r < bing_unit_rounds; ++r) x = (x ^ (x >> 13)) * 0xff51afd7ed558ccdULL + static_cast<std::uint64_t>(r);
  return x;
}

// The sum of units [lo, hi) of the job with `seed`: one serial piece.
inline std::uint64_t bing_piece(std::uint64_t lo, std::uint64_t hi, std::uint64_t seed) noexcept {
  std::uint64_t s = 0;
  for (std::uint64_t i = lo; i < hi; ++i) s += bing_unit(seed * 0x100000001b3ULL + i);
  return s;
}

}  // namespace promptly::server::programs
