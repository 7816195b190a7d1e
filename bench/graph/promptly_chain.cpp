// graph-chain on Promptly: a linear chain of --n tasks, each incrementing a counter (the Taskflow executor paper
// Sec. III-A, "Linear chain"). No parallelism at all: one worker carries every task through its
// continuation cache, and what the others burn meanwhile shows in run_util.
#include <memory>

#include "graph_bench.hpp"
#include "promptly_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const long n = a.get_long("n", 1L << 20);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    promptly::runtime rt{bench::graph::promptly_config(a)};
    a.finish();
    if (n < 1) bench::args::fail("--n must be >= 1");

    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        long long counter = 0;
        t.start();
        auto g = std::make_unique<promptly::graph>();
        promptly::graph_task prev = g->emplace([&counter] { ++counter; });
        for (long i = 1; i < n; ++i) {
            promptly::graph_task next = g->emplace([&counter] { ++counter; });
            prev.precede(next);
            prev = next;
        }
        t.built();
        g->run(rt).get();
        t.ran();
        g.reset();
        t.destroyed();
        return counter;
    });
}
