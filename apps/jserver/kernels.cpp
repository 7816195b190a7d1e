#include "kernels.hpp"

#include <algorithm>
#include <span>

#include <promptly/promptly.hpp>

namespace jserver {
namespace {

std::uint64_t mix(std::uint64_t& x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// C[n x n at c, stride s] += A * B (sub-blocks of the row-major matrices).
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
  auto A = [&](int r, int q) { return a + r * h * s + q * h; };
  auto B = [&](int r, int q) { return b + r * h * s + q * h; };
  auto C = [&](int r, int q) { return c + r * h * s + q * h; };
  // Round k: C[i][j] += A[i][k] * B[k][j] for the four (i, j); the rounds write the same blocks,
  // so they run one after the other.
  for (int k = 0; k < 2; ++k) {
    (void)promptly::join(
        [&] {
          (void)promptly::join([&] { mm_rec(A(0, k), B(k, 0), C(0, 0), h, s, base); },
                               [&] { mm_rec(A(0, k), B(k, 1), C(0, 1), h, s, base); });
        },
        [&] {
          (void)promptly::join([&] { mm_rec(A(1, k), B(k, 0), C(1, 0), h, s, base); },
                               [&] { mm_rec(A(1, k), B(k, 1), C(1, 1), h, s, base); });
        });
  }
}

// Merges sorted a and b into out (out.size() == a.size() + b.size()), splitting the larger
// input at its middle and the other by binary search, both halves forked (cilksort's merge).
void merge_par(std::span<const long> a, std::span<const long> b, std::span<long> out, std::size_t base) {
  if (a.size() < b.size()) std::swap(a, b);
  if (a.size() + b.size() <= base || b.empty()) {
    std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin());
    return;
  }
  const std::size_t ma = a.size() / 2;
  const std::size_t mb = static_cast<std::size_t>(std::lower_bound(b.begin(), b.end(), a[ma]) - b.begin());
  (void)promptly::join([&] { merge_par(a.first(ma), b.first(mb), out.first(ma + mb), base); },
                       [&] { merge_par(a.subspan(ma), b.subspan(mb), out.subspan(ma + mb), base); });
}

// Sorts v (using tmp of the same size).
void sort_rec(std::span<long> v, std::span<long> tmp, std::size_t base) {
  if (v.size() <= base) {
    std::sort(v.begin(), v.end());
    return;
  }
  const std::size_t h = v.size() / 2;
  (void)promptly::join([&] { sort_rec(v.first(h), tmp.first(h), base); },
                       [&] { sort_rec(v.subspan(h), tmp.subspan(h), base); });
  merge_par(v.first(h), v.subspan(h), tmp, base);
  (void)promptly::join([&] { std::copy(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(h), v.begin()); },
                       [&] { std::copy(tmp.begin() + static_cast<std::ptrdiff_t>(h), tmp.end(), v.begin() + static_cast<std::ptrdiff_t>(h)); });
}

}  // namespace

matrix random_matrix(std::size_t n, std::uint64_t seed) {
  matrix m{n, std::vector<double>(n * n)};
  for (auto& x : m.a) x = static_cast<double>(mix(seed) % 1000) / 500.0 - 1.0;
  return m;
}

double multiply(const matrix& a, const matrix& b, std::size_t base) {
  std::vector<double> c(a.n * a.n, 0.0);
  mm_rec(a.a.data(), b.a.data(), c.data(), a.n, a.n, base);
  double sum = 0;
  for (double x : c) sum += x;
  return sum;
}

double multiply_serial(const matrix& a, const matrix& b) {
  std::vector<double> c(a.n * a.n, 0.0);
  mm_rec(a.a.data(), b.a.data(), c.data(), a.n, a.n, a.n);
  double sum = 0;
  for (double x : c) sum += x;
  return sum;
}

long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

long fib(int n, int cutoff) {
  if (n < cutoff) return fib_serial(n);
  auto [x, y] = promptly::join([&] { return fib(n - 1, cutoff); }, [&] { return fib(n - 2, cutoff); });
  return x + y;
}

std::vector<long> random_longs(std::size_t n, std::uint64_t seed) {
  std::vector<long> v(n);
  for (auto& x : v) x = static_cast<long>(mix(seed) >> 1);
  return v;
}

std::uint64_t cilksort(std::vector<long>& v, std::size_t base) {
  std::vector<long> tmp(v.size());
  sort_rec(v, tmp, base);
  return sorted_checksum(v);
}

std::uint64_t sorted_checksum(const std::vector<long>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < v.size(); ++i) h = (h ^ static_cast<std::uint64_t>(v[i]) ^ i) * 1099511628211ull;
  return h;
}

std::vector<char> random_dna(std::size_t n, std::uint64_t seed) {
  std::vector<char> s(n);
  for (auto& c : s) c = "ACGT"[mix(seed) % 4];
  return s;
}

namespace {
struct sw_table {
  std::size_t n, m;
  std::vector<int> h;  // (n+1) x (m+1)
  int& at(std::size_t i, std::size_t j) { return h[i * (m + 1) + j]; }
};

// Cells [i0, i1) x [j0, j1) (1-based); returns the block's best score.
int sw_block(sw_table& t, const std::vector<char>& x, const std::vector<char>& y, std::size_t i0, std::size_t i1,
             std::size_t j0, std::size_t j1) {
  int best = 0;
  for (std::size_t i = i0; i < i1; ++i)
    for (std::size_t j = j0; j < j1; ++j) {
      int v = std::max({0, t.at(i - 1, j - 1) + (x[i - 1] == y[j - 1] ? 2 : -1), t.at(i - 1, j) - 1, t.at(i, j - 1) - 1});
      t.at(i, j) = v;
      best = std::max(best, v);
    }
  return best;
}
}  // namespace

int smith_waterman(const std::vector<char>& x, const std::vector<char>& y, std::size_t block) {
  sw_table t{x.size(), y.size(), std::vector<int>((x.size() + 1) * (y.size() + 1), 0)};
  const std::size_t bi = (x.size() + block - 1) / block, bj = (y.size() + block - 1) / block;
  std::vector<int> best(bi * bj, 0);
  for (std::size_t d = 0; d < bi + bj - 1; ++d) {  // wavefront d: blocks (r, d - r)
    const std::size_t r0 = d >= bj ? d - bj + 1 : 0, r1 = std::min(d, bi - 1);
    promptly::parallel_for(r0, r1 + 1, 1, [&](std::size_t r) {
      const std::size_t q = d - r;
      best[r * bj + q] = sw_block(t, x, y, 1 + r * block, 1 + std::min(x.size(), (r + 1) * block), 1 + q * block,
                                  1 + std::min(y.size(), (q + 1) * block));
    });
  }
  return *std::max_element(best.begin(), best.end());
}

int smith_waterman_serial(const std::vector<char>& x, const std::vector<char>& y) {
  sw_table t{x.size(), y.size(), std::vector<int>((x.size() + 1) * (y.size() + 1), 0)};
  return sw_block(t, x, y, 1, x.size() + 1, 1, y.size() + 1);
}

}  // namespace jserver
