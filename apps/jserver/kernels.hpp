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

// The Smith-Waterman score table, (n+1) x (m+1), row and column 0 zero.
class sw_table {
 public:
  sw_table(std::size_t n, std::size_t m) : m_(m), h_((n + 1) * (m + 1), 0) {}
  // Fills cells [i0, i1) x [j0, j1) (1-based; the cells above and to the left are filled);
  // returns the best score among them.
  int fill(const std::vector<char>& x, const std::vector<char>& y, std::size_t i0, std::size_t i1, std::size_t j0,
           std::size_t j1);

 private:
  int& at(std::size_t i, std::size_t j) { return h_[i * (m_ + 1) + j]; }
  std::size_t m_;
  std::vector<int> h_;
};

}  // namespace jserver
