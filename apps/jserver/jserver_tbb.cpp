// jserver_tbb: the job server's oneTBB peer, what a oneTBB user would write: each job type is
// enqueued into its own task_arena by an arrival thread, and arena priorities stand in for the
// job priorities. oneTBB has three (high, normal, low), so mm runs at high, fib at normal, sort
// and sw both at low. The kernels are the Promptly server's (kernels_generic.hpp) with
// tbb::parallel_invoke and tbb::parallel_for, the same grain; the workload, arrival schedule
// and report are shared (workload.hpp). Options and output: as jserver (no --policy).
//
// Worker count: global_control caps oneTBB's threads at --workers + 1, so that it starts
// exactly --workers worker threads (the arrival threads never join an arena), as the oneTBB
// peers of bench/priority do.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_invoke.h>
#include <oneapi/tbb/task_arena.h>

#include <latch>
#include <mutex>
#include <string>
#include <thread>

#include "bench_common.hpp"
#include "kernels_generic.hpp"
#include "workload.hpp"

namespace {
using clock_type = std::chrono::steady_clock;

struct tbb_fork {
  template <class F, class G>
  static void invoke(F&& f, G&& g) {
    tbb::parallel_invoke(std::forward<F>(f), std::forward<G>(g));
  }
  template <class Body>
  static void for_each(std::size_t first, std::size_t last, Body&& body) {
    tbb::parallel_for(first, last, std::forward<Body>(body));
  }
};

// Runs one job of type t; true if it computed the right answer.
bool run_job(std::size_t t, const jserver::workload& w) {
  namespace g = jserver::generic;
  switch (t) {
    case 0: return g::multiply<tbb_fork>(w.a, w.b, w.z.mm_base) == w.mm_answer;
    case 1: return g::fib<tbb_fork>(w.z.fib_n, w.z.fib_cutoff) == w.fib_answer;
    case 2: {
      std::vector<long> v = w.unsorted;
      return g::cilksort<tbb_fork>(v, w.z.sort_base) == w.sort_answer;
    }
    default: return g::smith_waterman<tbb_fork>(w.x, w.y, w.z.sw_block) == w.sw_answer;
  }
}

jserver::jserver_report run(unsigned workers, double load, std::chrono::milliseconds duration, std::uint64_t seed) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers) + 1);
  using prio = tbb::task_arena::priority;
  const int slots = static_cast<int>(workers);
  tbb::task_arena arenas[4] = {tbb::task_arena(slots, 0, prio::high), tbb::task_arena(slots, 0, prio::normal),
                               tbb::task_arena(slots, 0, prio::low), tbb::task_arena(slots, 0, prio::low)};
  const auto w = jserver::prepare_workload({}, seed);
  const double rate = jserver::arrival_rate(*w, load, workers);
  jserver::jserver_report rep;
  rep.offered_load = load;
  const auto start = clock_type::now() + std::chrono::milliseconds(20);
  const auto end = start + duration;
  std::vector<clock_type::time_point> arrivals[4];
  std::ptrdiff_t total = 0;
  for (std::size_t t = 0; t < 4; ++t) {
    rep.types[t] = {w->work_us[t], rate, {}};
    arrivals[t] = jserver::poisson_arrivals(rate, seed * 4 + t, start, end);
    total += static_cast<std::ptrdiff_t>(arrivals[t].size());
  }
  std::latch finished(total);
  std::mutex m;
  clock_type::time_point last = start;
  {
    std::vector<std::jthread> generators;
    for (std::size_t t = 0; t < 4; ++t)
      generators.emplace_back([&, t] {
        for (auto at : arrivals[t]) {
          std::this_thread::sleep_until(at);
          arenas[t].enqueue([&, t, at] {
            const bool ok = run_job(t, *w);
            const auto now = clock_type::now();
            {
              std::lock_guard lock(m);
              rep.types[t].latency_us.push_back(std::chrono::duration<double, std::micro>(now - at).count());
              if (!ok) ++rep.wrong_answers;
              last = std::max(last, now);
            }
            finished.count_down();
          });
        }
      });
  }
  finished.wait();
  rep.elapsed_s = std::chrono::duration<double>(last - start).count();
  return rep;
}

}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  long workers = a.get_long("workers", static_cast<long>(std::thread::hardware_concurrency()));
  const double load = static_cast<double>(a.get_long("load", 70)) / 100.0;
  const long duration_ms = a.get_long("duration-ms", 4000);
  const auto seed = static_cast<std::uint64_t>(a.get_long("seed", 1));
  const long warmup = a.get_long("warmup", 0), reps = a.get_long("reps", 1);
  const std::string samples_out = a.get_string("samples-out", "");
  a.finish();
  if (workers < 1 || reps < 1 || warmup < 0 || duration_ms <= 0 || load <= 0)
    bench::args::fail("bad --workers/--reps/--warmup/--duration-ms/--load");
  for (long i = 0; i < warmup; ++i) (void)run(static_cast<unsigned>(workers), load, std::chrono::milliseconds(1000), seed);
  const auto r = run(static_cast<unsigned>(workers), load, std::chrono::milliseconds(duration_ms * reps), seed);
  return jserver::print_report(r, "oneTBB task arenas, " + std::to_string(workers) + " workers", samples_out);
}
