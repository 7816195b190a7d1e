// A chain of --n dependent futures on Promptly: a root task does
//     for i in 0..n: x = promptly::async([x]{ return x + 1; }).get();
// so at most one task is ever runnable. Measures the cost of create + touch of a future
// (ns_per_future, derived by the harness) and what idle workers burn meanwhile: run_util =
// process user+sys CPU over the region / region wall (getrusage(RUSAGE_SELF) around each
// repetition). Run with --sleep adaptive (the sleep protocol) and --sleep never (thieves spin).
#include <promptly/promptly.hpp>

#include "bench_common.hpp"
#include "promptly_config.hpp"

static long chain(long n) {
    long x = 0;
    for (long i = 0; i < n; ++i) x = promptly::async([x] { return x + 1; }).get();
    return x;
}

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    long n = a.get_long("n", 1000000);
    const promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();

    promptly::runtime rt{cfg};

    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        long m = n;
        bench::opaque(m);
        return rt.run([m] { return chain(m); });
    });
    bench::print_result(std::to_string(answer), stats);
}
