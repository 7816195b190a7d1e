// fib(n) without any runtime: the serial baseline of the `core` suite. It is the serial
// elision of the parallel programs: the same code with each spawn replaced by a plain call,
// and the same plain recursion below --cutoff (with cutoff 2, simply the recursive fib).
// speedup_vs_serial and ns_per_spawn of the parallel runtimes are read against it.
// --workers is accepted (the protocol passes it) but ignored: one thread.
#include "bench_common.hpp"

static long cutoff = 2;


static long fib(long n) {
    if (n < cutoff) return bench::fib_serial(n);
    return fib(n - 1) + fib(n - 2);
}

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    long n = a.get_long("n", 32);
    cutoff = std::max(2L, a.get_long("cutoff", 2));
    a.get_long("workers", 1);
    long warmup = a.get_long("warmup", 2), reps = a.get_long("reps", 10);
    a.finish();

    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        long m = n;
        bench::opaque(m);
        return fib(m);
    });
    bench::print_result(std::to_string(answer), stats);
}
