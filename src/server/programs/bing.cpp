// bing: the synthetic interactive-service job of AMCilk Sec. 5.1 and 6.1:
// a compute-bound request parallelised with a parallel-for loop, whose work
// is drawn from the "Bing search server request work distribution" or the
// "finance server" one. AMCilk takes both from Li et al., "Work stealing
// for interactive services to meet target latency" (PPoPP 2016), and gives
// no numbers itself; the tables below are our reading of the shape of that
// paper's two work histograms, not its data:
//  * bing: heavy-tailed. Work in 10 ms bins from 5 ms to 195 ms; the bin
//    probabilities fall off as (k + 1)^-1.5, so most requests are short
//    (46% take 5 ms, 62% at most 15 ms) and 8% take over 100 ms.
//  * finance: light-tailed, unimodal. Work in 4 ms bins from 4 ms to 80 ms,
//    peaked at 12-20 ms (a discretised log-normal-like shape).
// A job's work is drawn from its table by `seed` (deterministic), unless
// `work_ms` > 0 gives it. One work unit is a fixed chain of integer
// arithmetic of about 1 us on a 3 GHz core; work_ms * 1000 * scale units
// are split (a parallel-for by halving) into pieces of `piece_units`; every
// split and piece is a cancellation point. The checksum (wrapping sum of every unit's value)
// lets a client verify that all the work was done.
#include <array>
#include <cmath>
#include <algorithm>
#include <cstdint>

#include "promptly/fork_join.hpp"
#include "bing_unit.hpp"
#include "programs.hpp"

namespace promptly::server::programs {

namespace {

constexpr std::uint64_t piece_units = 64;

constexpr std::array<double, 20> finance_weights{2, 6, 12, 16, 16, 13, 10, 7.5, 5.5, 4, 3, 2.2, 1.6, 1.2, 0.9, 0.7, 0.5, 0.4, 0.3, 0.2};

// Draws a work amount (ms) from the workload's table with u in [0, 1).
double draw_ms(bool finance, double u) {
  std::array<double, 20> w{};
  double total = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    w[k] = finance ? finance_weights[k] : std::pow(static_cast<double>(k) + 1.0, -1.5);
    total += w[k];
  }
  double acc = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    acc += w[k] / total;
    if (u < acc) return finance ? 4.0 + 4.0 * static_cast<double>(k) : 5.0 + 10.0 * static_cast<double>(k);
  }
  return finance ? 80.0 : 195.0;
}

// The parallel-for over pieces [lo, hi), written as its halving recursion
// so that a cancelled job returns at every frame without forking (O(depth)
// to stop; a parallel_reduce whose pieces threw would still visit every
// piece: 4.8 s for work_ms 10^5 before this).
std::uint64_t sum_units(std::uint64_t lo, std::uint64_t hi, std::uint64_t units, std::uint64_t seed, const job_context& ctx) {
  if (ctx.cancelled() || hi <= lo) return 0;
  if (hi - lo == 1) {
    return bing_piece(lo * piece_units, std::min(units, hi * piece_units), seed);
  }
  const std::uint64_t mid = lo + (hi - lo) / 2;
  auto [a, b] = promptly::join([&] { return sum_units(lo, mid, units, seed, ctx); },
                               [&] { return sum_units(mid, hi, units, seed, ctx); });
  return a + b;
}

json run(job_context& ctx) {
  const auto& args = ctx.args();
  const bool finance = args["workload"].get<std::string>() == "finance";
  const auto seed = args["seed"].get<std::uint64_t>();
  const double given = args["work_ms"].get<double>();
  const double scale = args["scale"].get<double>();
  const double u = static_cast<double>(bing_mix(seed) >> 11) * 0x1.0p-53;
  const double work_ms = given > 0 ? given : draw_ms(finance, u);
  const auto units = static_cast<std::uint64_t>(std::llround(work_ms * 1000.0 * scale));
  const std::uint64_t pieces = (units + piece_units - 1) / piece_units;
  const std::uint64_t checksum = sum_units(0, pieces, units, seed, ctx);
  ctx.throw_if_cancelled();  // the checksum is partial if cancelled
  return {{"workload", finance ? "finance" : "bing"}, {"work_ms", work_ms}, {"units", units}, {"checksum", checksum}};
}

}  // namespace

void register_bing(job_server& srv) {
  srv.register_program(
      "bing", run,
      arg_schema{}
          .string("workload", {.max_length = 16, .one_of = {"bing", "finance"}, .default_value = "bing",
                               .help = "work distribution: bing (heavy-tailed, 5-195 ms) or finance (4-80 ms)"})
          .integer("seed", {.min = 0, .max = std::int64_t{1} << 53, .default_value = 0, .help = "draws the job's work"})
          .number("work_ms", {.min = 0, .max = 10000, .default_value = 0, .help = "fixed work in ms (0 = draw it)"})
          .number("scale", {.min = 0, .max = 10, .default_value = 1, .help = "multiplies the work (for tests and small machines)"}),
      "Bing-like / finance-like synthetic request (AMCilk Sec. 5.1, 6.1); result: {workload, work_ms, units, checksum}");
}

}  // namespace promptly::server::programs
