// matmul: C = A * B for n x n matrices (n a power of two), by the
// divide-and-conquer recursion of Cilk's matmul: the four quadrant products
// of one half of the inner dimension in parallel, then the other half
// (they write the same blocks). Serial below `base`. Inputs are small
// integers stored as doubles, so every sum is exact and the checksum
// (the sum of C) can be checked against sum_k colsum_A(k) * rowsum_B(k).
// Memory: 3 n^2 doubles, at most 24 MiB at the bound n = 1024.
#include <vector>

#include "promptly/fork_join.hpp"
#include "promptly/parallel.hpp"
#include "programs.hpp"

namespace promptly::server::programs {

namespace {

constexpr std::size_t base = 32;

double a_at(std::size_t i, std::size_t j) { return static_cast<double>(static_cast<int>((i * 31 + j * 17) % 7) - 3); }
double b_at(std::size_t i, std::size_t j) { return static_cast<double>(static_cast<int>((i * 13 + j * 29) % 5) - 2); }

// C[n x n at c] += A[n x n at a] * B[n x n at b], row stride s.
void mm(const double* a, const double* b, double* c, std::size_t n, std::size_t s, const job_context& ctx) {
  if (n <= base) {
    ctx.throw_if_cancelled();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < n; ++k) {
        const double aik = a[i * s + k];
        for (std::size_t j = 0; j < n; ++j) c[i * s + j] += aik * b[k * s + j];
      }
    return;
  }
  const std::size_t h = n / 2;
  auto q = [&](const double* m, std::size_t r, std::size_t col) { return m + r * h * s + col * h; };
  auto qc = [&](std::size_t r, std::size_t col) { return c + r * h * s + col * h; };
  for (std::size_t k = 0; k < 2; ++k)
    promptly::join(
        [&] {
          promptly::join([&] { mm(q(a, 0, k), q(b, k, 0), qc(0, 0), h, s, ctx); },
                         [&] { mm(q(a, 0, k), q(b, k, 1), qc(0, 1), h, s, ctx); });
        },
        [&] {
          promptly::join([&] { mm(q(a, 1, k), q(b, k, 0), qc(1, 0), h, s, ctx); },
                         [&] { mm(q(a, 1, k), q(b, k, 1), qc(1, 1), h, s, ctx); });
        });
}

json run(job_context& ctx) {
  const auto n = ctx.args()["n"].get<std::size_t>();
  std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
  promptly::parallel_for(std::size_t{0}, n, 16, [&](std::size_t i) {
    for (std::size_t j = 0; j < n; ++j) {
      a[i * n + j] = a_at(i, j);
      b[i * n + j] = b_at(i, j);
    }
  });
  mm(a.data(), b.data(), c.data(), n, n, ctx);
  const double checksum = promptly::parallel_reduce(
      std::size_t{0}, n, 16, 0.0,
      [&](std::size_t i) {
        double r = 0;
        for (std::size_t j = 0; j < n; ++j) r += c[i * n + j];
        return r;
      },
      [](double x, double y) { return x + y; });
  double expected = 0;
  for (std::size_t k = 0; k < n; ++k) {
    double col_a = 0, row_b = 0;
    for (std::size_t i = 0; i < n; ++i) col_a += a_at(i, k);
    for (std::size_t j = 0; j < n; ++j) row_b += b_at(k, j);
    expected += col_a * row_b;
  }
  return {{"n", n}, {"checksum", checksum}, {"expected", expected}, {"verified", checksum == expected}};
}

}  // namespace

void register_matmul(job_server& srv) {
  srv.register_program("matmul", run,
                       arg_schema{}.integer("n", {.min = 1, .max = 1024, .help = "matrix size, a power of two (1024: 24 MiB)", .power_of_two = true}),
                       "divide-and-conquer matrix multiply; result: {n, checksum, expected, verified}");
}

}  // namespace promptly::server::programs
