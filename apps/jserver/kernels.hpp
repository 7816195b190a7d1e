// The four job kernels, parallel with Promptly's fork-join (each runs at its job's level: work
// keeps its level), plus their inputs and serial references for checking.
//
//   mm    z-order divide-and-conquer matrix multiplication C = A * B (n x n, n a power of two,
//         serial below `base`): 8 half-size products in two rounds of 4 parallel ones
//   fib   fib(n), both calls forked above `cutoff`
//   sort  cilksort: merge sort of n longs, halves forked, merges split by binary search and forked
//   sw    Smith-Waterman local alignment of two length-n strings, blocks of `block` x `block`
//         cells computed in anti-diagonal wavefronts (a parallel_for per wavefront)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jserver {

struct matrix {
  std::size_t n = 0;
  std::vector<double> a;  // row-major n x n
};
matrix random_matrix(std::size_t n, std::uint64_t seed);
// C = A * B; returns the sum of C's entries (the job's answer).
double multiply(const matrix& a, const matrix& b, std::size_t base);
double multiply_serial(const matrix& a, const matrix& b);

long fib(int n, int cutoff);
long fib_serial(int n);

std::vector<long> random_longs(std::size_t n, std::uint64_t seed);
// Sorts v; returns an order-sensitive checksum of the result.
std::uint64_t cilksort(std::vector<long>& v, std::size_t base);
std::uint64_t sorted_checksum(const std::vector<long>& v);

std::vector<char> random_dna(std::size_t n, std::uint64_t seed);
// The best local alignment score (match +2, mismatch -1, gap -1).
int smith_waterman(const std::vector<char>& x, const std::vector<char>& y, std::size_t block);
int smith_waterman_serial(const std::vector<char>& x, const std::vector<char>& y);

}  // namespace jserver
