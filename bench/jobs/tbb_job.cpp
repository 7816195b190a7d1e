// Suite `jobs`, oneTBB with one OS process per job: the child, one job (started by
// bench_jobs_tbb_process, tbb_process_per_job.cpp). It runs its own oneTBB runtime of --workers
// threads (a task_arena of --workers slots that main joins, global_control capping TBB's pool to
// match, as the core suite's TBB peers honour --workers), sums the Bing-like pieces of its
// --units units with tbb::parallel_reduce over a blocked_range of pieces with grain 1 and
// simple_partitioner (halving down to one piece, as Promptly), and writes one line to stdout:
//   <start_ns> <end_ns> <checksum>
// start_ns is CLOCK_MONOTONIC at main's start (so the driver can tell process start-up from the
// job's own time), end_ns when the sum is done.
//
// Usage: bench_jobs_tbb_job --units U --seed S --piece P --workers W
#include <signal.h>
#include <sys/prctl.h>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "jobs_common.hpp"
#include "tbb_job_checksum.hpp"

namespace {

std::uint64_t parse_u64(bench::args& a, const char* key) {
  const std::string v = a.get_string(key, "");
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || end == v.c_str() || *end != '\0')
    bench::args::fail(std::string("--") + key + " needs an unsigned integer");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t start_ns = jobs::now_ns();
  // Dies with the driver. If the driver died before this call, the job still ends on its own:
  // its one write to a pipe without a reader raises SIGPIPE.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  bench::args a(argc, argv);
  const std::uint64_t units = parse_u64(a, "units");
  const std::uint64_t seed = parse_u64(a, "seed");
  const std::uint64_t piece = parse_u64(a, "piece");
  const long workers = a.get_long("workers", 2);
  a.finish();
  if (piece == 0 || workers <= 0) bench::args::fail("--piece and --workers must be > 0");

  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(workers));
  tbb::task_arena arena{static_cast<int>(workers)};
  const std::uint64_t sum = arena.execute([&] { return jobs::tbb_job_checksum(units, piece, seed); });
  const std::int64_t end_ns = jobs::now_ns();
  std::printf("%lld %lld %llu\n", static_cast<long long>(start_ns), static_cast<long long>(end_ns),
              static_cast<unsigned long long>(sum));
  return std::fflush(stdout) == 0 ? 0 : 1;
}
