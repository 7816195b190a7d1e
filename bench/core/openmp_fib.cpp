// fib(n) with OpenMP tasks (gcc's libgomp): inside one parallel region of --workers threads,
// a single thread starts the recursion; every call with n >= cutoff spawns its first branch
// as `#pragma omp task`, computes the second inline, then `#pragma omp taskwait`. One spawn
// per call with n >= cutoff, as in every other runtime of the `core` suite.
#include <omp.h>

#include "bench_common.hpp"

static long cutoff = 2;


static long fib(long n) {
    if (n < cutoff) return bench::fib_serial(n);
    long x = 0, y = 0;
#pragma omp task shared(x) firstprivate(n)
    x = fib(n - 1);
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    long n = a.get_long("n", 32);
    cutoff = std::max(2L, a.get_long("cutoff", 2));
    long workers = a.get_long("workers", 2);
    long warmup = a.get_long("warmup", 2), reps = a.get_long("reps", 10);
    a.finish();

    omp_set_num_threads(int(workers));
    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        long m = n, r = 0;
        bench::opaque(m);
#pragma omp parallel num_threads(int(workers))
#pragma omp single
        r = fib(m);
        return r;
    });
    bench::print_result(std::to_string(answer), stats);
}
