// stream: a memory-streaming job (the streaming co-runner of AMCilk
// Sec. 5.2): `reps` parallel triads a[i] = b[i] + 3 c[i] over three arrays
// of `mib` MiB in total, then a parallel sum of a. The sum has a closed
// form (b and c are periodic), so the result can be verified. The
// cancellation check is at every piece of every pass. Memory: `mib` MiB,
// at most 256 MiB.
#include <chrono>
#include <cstdint>
#include <vector>

#include "promptly/parallel.hpp"
#include "programs.hpp"

namespace promptly::server::programs {

namespace {

constexpr std::size_t grain = 1 << 14;

double b_at(std::size_t i) { return static_cast<double>(i % 7); }
double c_at(std::size_t i) { return static_cast<double>(i % 5); }

json run(job_context& ctx) {
  const auto mib = ctx.args()["mib"].get<std::size_t>();
  const auto reps = ctx.args()["reps"].get<std::size_t>();
  const std::size_t n = mib * (std::size_t{1} << 20) / (3 * sizeof(double));
  std::vector<double> a(n), b(n), c(n);
  promptly::parallel_for(promptly::index_range<std::size_t>(0, n), grain, [&](promptly::index_range<std::size_t> r) {
    for (std::size_t i : r) {
      b[i] = b_at(i);
      c[i] = c_at(i);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t rep = 0; rep < reps; ++rep)
    promptly::parallel_for(promptly::index_range<std::size_t>(0, n), grain, [&](promptly::index_range<std::size_t> r) {
      ctx.throw_if_cancelled();
      for (std::size_t i : r) a[i] = b[i] + 3.0 * c[i];
    });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double sum = promptly::parallel_reduce(
      std::size_t{0}, n, grain, 0.0, [&](std::size_t i) { return a[i]; },
      [](double x, double y) { return x + y; });
  // Closed form: a[i] = i%7 + 3 (i%5) has period 35; every partial sum is an
  // integer below 2^53, so the double sums are exact in any order.
  double period = 0;
  for (std::size_t i = 0; i < 35; ++i) period += b_at(i) + 3.0 * c_at(i);
  double expected = period * static_cast<double>(n / 35);
  for (std::size_t i = n - n % 35; i < n; ++i) expected += b_at(i) + 3.0 * c_at(i);
  const double bytes = 3.0 * sizeof(double) * static_cast<double>(n) * static_cast<double>(reps);
  return {{"mib", mib},           {"elements", n},           {"reps", reps},
          {"sum", sum},           {"expected", expected},    {"verified", sum == expected},
          {"seconds", seconds},   {"gb_per_s", seconds > 0 ? bytes / seconds / 1e9 : 0.0}};
}

}  // namespace

void register_stream(job_server& srv) {
  srv.register_program("stream", run,
                       arg_schema{}
                           .integer("mib", {.min = 1, .max = 256, .default_value = 64, .help = "working set in MiB (three arrays)"})
                           .integer("reps", {.min = 1, .max = 100, .default_value = 4, .help = "triad passes over the arrays"}),
                       "memory-streaming triad and sum; result: {mib, elements, reps, sum, expected, verified, gb_per_s}");
}

}  // namespace promptly::server::programs
