// fib(n) on Promptly: every call with n >= cutoff forks its two branches with
// promptly::join (one spawn per call, as in every other runtime of the `core` suite);
// below the cutoff plain recursion. The runtime has --workers workers and the sleep
// protocol --sleep adaptive|never; each timed repetition is one runtime::run().
#include <promptly/promptly.hpp>

#include "bench_common.hpp"
#include "promptly_config.hpp"

static long cutoff = 2;


static long fib(long n) {
    if (n < cutoff) return bench::fib_serial(n);
    auto [x, y] = promptly::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
    return x + y;
}

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    long n = a.get_long("n", 32);
    cutoff = std::max(2L, a.get_long("cutoff", 2));
    const promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 2), reps = a.get_long("reps", 10);
    a.finish();

    promptly::runtime rt{cfg};

    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        long m = n;
        bench::opaque(m);
        return rt.run([m] { return fib(m); });
    });
    bench::print_result(std::to_string(answer), stats);
}
