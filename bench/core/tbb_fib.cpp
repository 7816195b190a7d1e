// fib(n) on oneTBB: one tbb::task_group per call with n >= cutoff; the first branch is
// spawned with run(), the second is computed inline, then wait(). One spawn per call with
// n >= cutoff, as in every other runtime of the `core` suite; below the cutoff plain recursion.
// Worker count: a task_arena of --workers slots (the calling thread takes one of them), with
// global_control capping TBB's own thread pool to the same number.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include "bench_common.hpp"

static long cutoff = 2;


static long fib(long n) {
    if (n < cutoff) return bench::fib_serial(n);
    long x = 0, y = 0;
    tbb::task_group g;
    g.run([&] { x = fib(n - 1); });
    y = fib(n - 2);
    g.wait();
    return x + y;
}

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    long n = a.get_long("n", 32);
    cutoff = std::max(2L, a.get_long("cutoff", 2));
    long workers = a.get_long("workers", 2);
    long warmup = a.get_long("warmup", 2), reps = a.get_long("reps", 10);
    a.finish();

    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers));
    tbb::task_arena arena{int(workers)};
    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        long m = n;
        bench::opaque(m);
        return arena.execute([&] { return fib(m); });
    });
    bench::print_result(std::to_string(answer), stats);
}
