// Suite `jobs`, bench `asteal-phases` (AMCilk Sec. 6.3): two jobs run at once on the embedded job
// server, each alternating `phases` times between a high-parallelism phase (one parallel loop of
// --hi-iters iterations) and a low-parallelism phase (--lo-loops parallel loops of --lo-iters
// iterations each, one after the other), in opposite phase: job A starts high, job B starts low.
// A policy that follows each job's parallelism (asteal) gives the job in its high phase the core
// the other job cannot use; an equal split (equi) leaves it idle; oblivious is "no partition"
// (every core serves every job). Metrics: completion_s_a, completion_s_b (submission -> job end);
// region_s is their mean. The paper's sizes (12.8M iterations; 4000 loops of 100) are scaled by
// 1/20 for 2 cores instead of 40: 640,000 iterations and loops of 5 (--rounds sets an
// iteration's cost).
#include <atomic>
#include <string>

#include "jobs_common.hpp"
#include "promptly/index_range.hpp"
#include "promptly/parallel.hpp"
#include "promptly/runtime.hpp"
#include "promptly/server/job_server.hpp"

namespace {

// One loop iteration: `rounds` rounds of the work unit's arithmetic (128: about 0.2 us here).
long rounds = 128;
std::uint64_t iteration(std::uint64_t i) {
  std::uint64_t x = i | 1;
  for (long r = 0; r < rounds; ++r) x = (x ^ (x >> 13)) * 0xff51afd7ed558ccdULL + static_cast<std::uint64_t>(r);
  return x;
}

std::uint64_t parallel_loop(std::uint64_t base, std::uint64_t n, std::uint64_t grain) {
  std::atomic<std::uint64_t> sum{0};
  promptly::parallel_for(promptly::index_range<std::uint64_t>(0, n), grain, [&](promptly::index_range<std::uint64_t> r) {
    std::uint64_t s = 0;
    for (std::uint64_t i : r) s += iteration(base + i);
    sum.fetch_add(s, std::memory_order_relaxed);  // relaxed: read after the loop's join
  });
  return sum.load(std::memory_order_relaxed);
}

}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  const std::string policy = a.get_string("policy", "asteal");
  const long phases = a.get_long("phases", 20);
  const long hi_iters = a.get_long("hi-iters", 640'000);
  const long lo_loops = a.get_long("lo-loops", 4000);
  const long lo_iters = a.get_long("lo-iters", 5);
  rounds = a.get_long("rounds", rounds);
  const auto workers = static_cast<unsigned>(a.get_long("workers", 2));
  const long warmup = a.get_long("warmup", 0);
  const long reps = a.get_long("reps", 1);
  a.finish();
  if (phases < 1 || rounds < 1 || hi_iters < 1 || lo_loops < 1 || lo_iters < 1 || workers == 0)
    bench::args::fail("--phases, --rounds, --hi-iters, --lo-loops, --lo-iters and --workers must be >= 1");

  promptly::runtime_config cfg;
  cfg.workers = workers;
  cfg.policy = policy;
  promptly::runtime rt(cfg);
  promptly::server::job_server srv(rt);
  srv.register_program(
      "phases",
      [&](promptly::server::job_context& ctx) -> promptly::server::json {
        const bool start_high = ctx.args()["start_high"].get<bool>();
        std::uint64_t sum = 0;
        for (long p = 0; p < phases; ++p) {
          const auto base = static_cast<std::uint64_t>(p) << 32;
          if ((p % 2 == 0) == start_high) {
            sum += parallel_loop(base, static_cast<std::uint64_t>(hi_iters), 256);
          } else {
            for (long l = 0; l < lo_loops; ++l)
              sum += parallel_loop(base + static_cast<std::uint64_t>(l) * 1024, static_cast<std::uint64_t>(lo_iters), 1);
          }
        }
        return {{"checksum", sum}, {"end_ns", jobs::now_ns()}};
      },
      promptly::server::arg_schema{}.boolean("start_high"));

  double last_a = 0, last_b = 0;
  auto [answer, stats] = bench::measure(warmup, reps, [&] {
    const std::int64_t t0 = jobs::now_ns();
    auto ja = srv.submit("phases", {{"start_high", true}});
    auto jb = srv.submit("phases", {{"start_high", false}});
    const auto ra = ja.wait();
    const auto rb = jb.wait();
    if (ra.state != promptly::server::job_state::done || rb.state != promptly::server::job_state::done)
      bench::args::fail("a phases job did not finish: " + ra.error + rb.error);
    last_a = static_cast<double>(ra.result["end_ns"].get<std::int64_t>() - t0) / 1e9;
    last_b = static_cast<double>(rb.result["end_ns"].get<std::int64_t>() - t0) / 1e9;
    return ra.result["checksum"].get<std::uint64_t>() + rb.result["checksum"].get<std::uint64_t>();
  });
  stats.region_s = stats.region_s_min = (last_a + last_b) / 2;
  bench::print_result("\"" + std::to_string(answer) + "\"", stats,
                      {{"completion_s_a", last_a}, {"completion_s_b", last_b}});
  return 0;
}
