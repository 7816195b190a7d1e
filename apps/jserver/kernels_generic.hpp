// The four parallel kernels, written once over a fork-join interface so that the Promptly job
// server and its oneTBB peer run the same algorithms with the same grain:
//
//   struct Fork {
//     template <class F, class G> static void invoke(F&& f, G&& g);   // f and g in parallel
//     template <class Body> static void for_each(std::size_t first, std::size_t last, Body&& b);
//   };
//
// kernels.cpp instantiates them with promptly::join / promptly::parallel_for; the oneTBB peer
// (jserver_tbb.cpp) with tbb::parallel_invoke / tbb::parallel_for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "kernels.hpp"

namespace jserver::generic {

// C[n x n at c, stride s] += A * B (sub-blocks of row-major matrices), z-order recursion.
template <class Fork>
void mm_rec(const double* a, const double* b, double* c, std::size_t n, std::size_t s, std::size_t base) {
  if (n <= base) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < n; ++k) {
        const double aik = a[i * s + k];
        for (std::size_t j = 0; j < n; ++j) c[i * s + j] += aik * b[k * s + j];
      }
    return;
  }
  const std::size_t h = n / 2;
  auto A = [&](std::size_t r, std::size_t q) { return a + r * h * s + q * h; };
  auto B = [&](std::size_t r, std::size_t q) { return b + r * h * s + q * h; };
  auto C = [&](std::size_t r, std::size_t q) { return c + r * h * s + q * h; };
  // Round k: C[i][j] += A[i][k] * B[k][j] for the four (i, j); the two rounds write the same
  // blocks, so they run one after the other.
  for (std::size_t k = 0; k < 2; ++k)
    Fork::invoke(
        [&] {
          Fork::invoke([&] { mm_rec<Fork>(A(0, k), B(k, 0), C(0, 0), h, s, base); },
                       [&] { mm_rec<Fork>(A(0, k), B(k, 1), C(0, 1), h, s, base); });
        },
        [&] {
          Fork::invoke([&] { mm_rec<Fork>(A(1, k), B(k, 0), C(1, 0), h, s, base); },
                       [&] { mm_rec<Fork>(A(1, k), B(k, 1), C(1, 1), h, s, base); });
        });
}

template <class Fork>
double multiply(const matrix& a, const matrix& b, std::size_t base) {
  std::vector<double> c(a.n * a.n, 0.0);
  mm_rec<Fork>(a.a.data(), b.a.data(), c.data(), a.n, a.n, base);
  double sum = 0;
  for (double x : c) sum += x;
  return sum;
}

template <class Fork>
long fib(int n, int cutoff) {
  if (n < cutoff) return fib_serial(n);
  long x = 0, y = 0;
  Fork::invoke([&] { x = fib<Fork>(n - 1, cutoff); }, [&] { y = fib<Fork>(n - 2, cutoff); });
  return x + y;
}

// Merges sorted a and b into out, splitting the larger input at its middle and the other by
// binary search, both halves in parallel (cilksort's merge).
template <class Fork>
void merge_par(std::span<const long> a, std::span<const long> b, std::span<long> out, std::size_t base) {
  if (a.size() < b.size()) std::swap(a, b);
  if (a.size() + b.size() <= base || b.empty()) {
    std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin());
    return;
  }
  const std::size_t ma = a.size() / 2;
  const std::size_t mb = static_cast<std::size_t>(std::lower_bound(b.begin(), b.end(), a[ma]) - b.begin());
  Fork::invoke([&] { merge_par<Fork>(a.first(ma), b.first(mb), out.first(ma + mb), base); },
               [&] { merge_par<Fork>(a.subspan(ma), b.subspan(mb), out.subspan(ma + mb), base); });
}

template <class Fork>
void sort_rec(std::span<long> v, std::span<long> tmp, std::size_t base) {
  if (v.size() <= base) {
    std::sort(v.begin(), v.end());
    return;
  }
  const std::size_t h = v.size() / 2;
  Fork::invoke([&] { sort_rec<Fork>(v.first(h), tmp.first(h), base); },
               [&] { sort_rec<Fork>(v.subspan(h), tmp.subspan(h), base); });
  merge_par<Fork>(v.first(h), v.subspan(h), tmp, base);
  const auto mid = static_cast<std::ptrdiff_t>(h);
  Fork::invoke([&] { std::copy(tmp.begin(), tmp.begin() + mid, v.begin()); },
               [&] { std::copy(tmp.begin() + mid, tmp.end(), v.begin() + mid); });
}

template <class Fork>
std::uint64_t cilksort(std::vector<long>& v, std::size_t base) {
  std::vector<long> tmp(v.size());
  sort_rec<Fork>(v, tmp, base);
  return sorted_checksum(v);
}

template <class Fork>
int smith_waterman(const std::vector<char>& x, const std::vector<char>& y, std::size_t block) {
  sw_table t(x.size(), y.size());
  const std::size_t bi = (x.size() + block - 1) / block, bj = (y.size() + block - 1) / block;
  std::vector<int> best(bi * bj, 0);
  for (std::size_t d = 0; d < bi + bj - 1; ++d) {  // wavefront d: blocks (r, d - r)
    const std::size_t r0 = d >= bj ? d - bj + 1 : 0, r1 = std::min(d, bi - 1);
    Fork::for_each(r0, r1 + 1, [&](std::size_t r) {
      const std::size_t q = d - r;
      best[r * bj + q] = t.fill(x, y, 1 + r * block, 1 + std::min(x.size(), (r + 1) * block), 1 + q * block,
                                1 + std::min(y.size(), (q + 1) * block));
    });
  }
  return *std::max_element(best.begin(), best.end());
}

}  // namespace jserver::generic
