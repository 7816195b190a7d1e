// nqueens: the number of ways to place n queens on an n x n board, by
// bitmask backtracking; the first `parallel_rows` rows fork one task per
// free column (parallel_reduce), the rest of each subtree is serial. The
// cancellation check is at every serial node with at least `check_rows`
// rows left below it (at the root of each serial subtree only, n = 16 under
// ThreadSanitizer took over a minute to stop).
#include <bit>
#include <cstdint>

#include "promptly/parallel.hpp"
#include "programs.hpp"

namespace promptly::server::programs {

namespace {

constexpr int parallel_rows = 3;

// Rows left at which a serial subtree checks for cancellation: a subtree of
// fewer rows has at most a few thousand nodes; above, the check (one
// acquire load) is a small fraction of a node's work.
constexpr int check_rows = 6;

std::uint64_t count_serial(std::uint32_t all, std::uint32_t cols, std::uint32_t d1, std::uint32_t d2, int rows_left,
                           const job_context& ctx) {
  if (cols == all) return 1;
  if (rows_left >= check_rows) ctx.throw_if_cancelled();
  std::uint64_t n = 0;
  for (std::uint32_t free = all & ~(cols | d1 | d2); free != 0;) {
    const std::uint32_t bit = free & (~free + 1);
    free ^= bit;
    n += count_serial(all, cols | bit, ((d1 | bit) << 1) & all, (d2 | bit) >> 1, rows_left - 1, ctx);
  }
  return n;
}

std::uint64_t count(std::uint32_t all, std::uint32_t cols, std::uint32_t d1, std::uint32_t d2, int row,
                    const job_context& ctx) {
  if (row >= parallel_rows || cols == all) return count_serial(all, cols, d1, d2, std::popcount(all) - row, ctx);
  std::uint32_t bits[32];
  int k = 0;
  for (std::uint32_t free = all & ~(cols | d1 | d2); free != 0;) {
    const std::uint32_t bit = free & (~free + 1);
    free ^= bit;
    bits[k++] = bit;
  }
  return promptly::parallel_reduce(
      0, k, 1, std::uint64_t{0},
      [&](int i) {
        const std::uint32_t bit = bits[i];
        return count(all, cols | bit, ((d1 | bit) << 1) & all, (d2 | bit) >> 1, row + 1, ctx);
      },
      [](std::uint64_t a, std::uint64_t b) { return a + b; });
}

}  // namespace

void register_nqueens(job_server& srv) {
  srv.register_program(
      "nqueens",
      [](job_context& ctx) -> json {
        const auto n = ctx.args()["n"].get<int>();
        const std::uint32_t all = (std::uint32_t{1} << n) - 1;
        return {{"n", n}, {"solutions", count(all, 0, 0, 0, 0, ctx)}};
      },
      arg_schema{}.integer("n", {.min = 1, .max = 16, .help = "board size (n = 16: 14.8 million solutions)"}),
      "number of n-queens solutions; result: {n, solutions}");
}

}  // namespace promptly::server::programs
