// jserver: the job server as a program (README.md). Runs one measured window and prints a
// summary on stderr and the benchmark protocol's RESULT line on stdout (bench/README.md).
//
//   jserver [--policy aps|prompt|fair|oblivious] [--workers N] [--load 70] [--duration-ms 4000]
//           [--seed 1] [--fair-weights 10,40,25,15,10,0] [--warmup W --reps R]
//           [--samples-out FILE.json]
//
// --load is the offered utilisation in percent of the workers. --reps R makes the window
// R x duration-ms (the harness's repetitions); --warmup W runs W untimed windows of 1 s first.
// "result" is "ok" when every job computed the right answer (else the program exits 1).
// --samples-out writes every measured job's latency per type (workload.hpp, print_report).
#include <cstdio>
#include <string>

#include "app_main.hpp"
#include "bench_common.hpp"
#include "jserver.hpp"
#include "priorities.hpp"

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  // fair: a criterion that favours the short, urgent job types (the generators need little).
  const auto cfg = apps::runtime_options(a, jserver::order::size, "10,40,25,15,10,0");
  jserver::jserver_options o;
  o.load = static_cast<double>(a.get_long("load", 70)) / 100.0;
  const long duration_ms = a.get_long("duration-ms", 4000);
  o.seed = static_cast<std::uint64_t>(a.get_long("seed", 1));
  const long warmup = a.get_long("warmup", 0), reps = a.get_long("reps", 1);
  const std::string samples_out = a.get_string("samples-out", "");
  a.finish();
  if (reps < 1 || warmup < 0 || duration_ms <= 0 || o.load <= 0) bench::args::fail("bad --reps/--warmup/--duration-ms/--load");

  try {
    promptly::runtime rt{cfg};
    for (long w = 0; w < warmup; ++w) {
      auto wo = o;
      wo.duration = std::chrono::milliseconds(1000);
      (void)jserver::run_jserver(rt, wo);
    }
    o.duration = std::chrono::milliseconds(duration_ms * reps);
    const auto r = jserver::run_jserver(rt, o);
    return jserver::print_report(r, "policy " + cfg.policy + ", " + std::to_string(rt.config().workers) + " workers",
                                 samples_out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jserver: %s\n", e.what());
    return 1;
  }
  return 0;
}
