// graph-tree on Promptly: a complete binary tree of --n = 2^k - 1 tasks; task i precedes tasks
// 2i+1 and 2i+2 (the Taskflow executor paper Sec. III-A, "Binary tree"). A task does no work but mark itself done.
#include <memory>
#include <vector>

#include "graph_bench.hpp"
#include "promptly_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const long n = a.get_long("n", (1L << 20) - 1);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    promptly::runtime rt{bench::graph::promptly_config(a)};
    a.finish();
    if (n < 1 || ((n + 1) & n) != 0) bench::args::fail("--n must be 2^k - 1");

    std::vector<char> done(static_cast<std::size_t>(n), 0);
    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        std::fill(done.begin(), done.end(), 0);
        t.start();
        auto g = std::make_unique<promptly::graph>();
        std::vector<promptly::graph_task> tasks(static_cast<std::size_t>(n));
        for (long i = 0; i < n; ++i) {
            char* mark = &done[std::size_t(i)];
            tasks[std::size_t(i)] = g->emplace([mark] { *mark = 1; });
        }
        for (long i = 0; 2 * i + 2 < n; ++i) tasks[std::size_t(i)].precede(tasks[std::size_t(2 * i + 1)], tasks[std::size_t(2 * i + 2)]);
        t.built();
        g->run(rt).get();
        t.ran();
        tasks.clear();
        g.reset();
        t.destroyed();
        long long visited = 0;
        for (char c : done) visited += c;
        return visited;
    });
}
