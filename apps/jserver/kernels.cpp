#include "kernels.hpp"

#include <algorithm>

#include <promptly/promptly.hpp>

#include "kernels_generic.hpp"

namespace jserver {
namespace {

std::uint64_t mix(std::uint64_t& x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Promptly's fork-join: the kernels run at the level of the job that calls them.
struct promptly_fork {
  template <class F, class G>
  static void invoke(F&& f, G&& g) {
    (void)promptly::join(std::forward<F>(f), std::forward<G>(g));
  }
  template <class Body>
  static void for_each(std::size_t first, std::size_t last, Body&& body) {
    promptly::parallel_for(first, last, std::size_t{1}, std::forward<Body>(body));
  }
};

// One thread: the serial reference (with n <= base, mm_rec is the plain triple loop anyway).
struct serial_fork {
  template <class F, class G>
  static void invoke(F&& f, G&& g) {
    f();
    g();
  }
};

}  // namespace

matrix random_matrix(std::size_t n, std::uint64_t seed) {
  matrix m{n, std::vector<double>(n * n)};
  for (auto& x : m.a) x = static_cast<double>(mix(seed) % 1000) / 500.0 - 1.0;
  return m;
}

double multiply(const matrix& a, const matrix& b, std::size_t base) { return generic::multiply<promptly_fork>(a, b, base); }

double multiply_serial(const matrix& a, const matrix& b) {
  std::vector<double> c(a.n * a.n, 0.0);
  generic::mm_rec<serial_fork>(a.a.data(), b.a.data(), c.data(), a.n, a.n, a.n);  // n <= base: the plain triple loop
  double sum = 0;
  for (double x : c) sum += x;
  return sum;
}

long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

long fib(int n, int cutoff) { return generic::fib<promptly_fork>(n, cutoff); }

std::vector<long> random_longs(std::size_t n, std::uint64_t seed) {
  std::vector<long> v(n);
  for (auto& x : v) x = static_cast<long>(mix(seed) >> 1);
  return v;
}

std::uint64_t cilksort(std::vector<long>& v, std::size_t base) { return generic::cilksort<promptly_fork>(v, base); }

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

int sw_table::fill(const std::vector<char>& x, const std::vector<char>& y, std::size_t i0, std::size_t i1,
                   std::size_t j0, std::size_t j1) {
  int best = 0;
  for (std::size_t i = i0; i < i1; ++i)
    for (std::size_t j = j0; j < j1; ++j) {
      int v = std::max({0, at(i - 1, j - 1) + (x[i - 1] == y[j - 1] ? 2 : -1), at(i - 1, j) - 1, at(i, j - 1) - 1});
      at(i, j) = v;
      best = std::max(best, v);
    }
  return best;
}

int smith_waterman(const std::vector<char>& x, const std::vector<char>& y, std::size_t block) {
  return generic::smith_waterman<promptly_fork>(x, y, block);
}

int smith_waterman_serial(const std::vector<char>& x, const std::vector<char>& y) {
  sw_table t(x.size(), y.size());
  return t.fill(x, y, 1, x.size() + 1, 1, y.size() + 1);
}

}  // namespace jserver
