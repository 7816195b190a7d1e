// graph-matmul on Promptly: C = A * B for --n x --n matrices as a row-task graph (the Taskflow executor paper
// Sec. III-A, "Matrix multiplication"): n tasks initialise one row of A, B and C each, a
// barrier task follows all of them, and n tasks multiply one row each after the barrier.
#include <memory>
#include <vector>

#include "graph_bench.hpp"
#include "promptly_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const long n = a.get_long("n", 1024);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    promptly::runtime rt{bench::graph::promptly_config(a)};
    a.finish();
    if (n < 1) bench::args::fail("--n must be >= 1");

    bench::graph::matrices m(n);
    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        m.poison();
        t.start();
        auto g = std::make_unique<promptly::graph>();
        std::vector<promptly::graph_task> init(static_cast<std::size_t>(n));
        for (long i = 0; i < n; ++i) init[std::size_t(i)] = g->emplace([&m, i] { m.init_row(i); });
        promptly::graph_task barrier = g->emplace([] {});
        for (long i = 0; i < n; ++i) {
            barrier.succeed(init[std::size_t(i)]);
            barrier.precede(g->emplace([&m, i] { m.multiply_row(i); }));
        }
        t.built();
        g->run(rt).get();
        t.ran();
        init.clear();
        g.reset();
        t.destroyed();
        return m.checksum();
    });
}
