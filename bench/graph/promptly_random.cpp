// graph-random on Promptly: the random DAG of graph_bench.hpp (--n tasks, in- and out-degree
// <= 4, --seed), each task marking itself visited (the Taskflow executor paper Sec. III-A, "Graph traversal").
#include <memory>
#include <vector>

#include "graph_bench.hpp"
#include "promptly_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const long n = a.get_long("n", 1000000);
    const long seed = a.get_long("seed", 1);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    promptly::runtime rt{bench::graph::promptly_config(a)};
    a.finish();
    if (n < 1) bench::args::fail("--n must be >= 1");

    const bench::graph::random_dag dag{static_cast<std::uint32_t>(n), static_cast<std::uint64_t>(seed)};
    std::vector<char> visited(static_cast<std::size_t>(n), 0);
    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        std::fill(visited.begin(), visited.end(), 0);
        t.start();
        auto g = std::make_unique<promptly::graph>();
        std::vector<promptly::graph_task> tasks(static_cast<std::size_t>(n));
        for (long i = 0; i < n; ++i) {
            char* mark = &visited[std::size_t(i)];
            tasks[std::size_t(i)] = g->emplace([mark] { *mark = 1; });
        }
        for (long i = 0; i < n; ++i)
            for (std::uint32_t e = dag.offset[std::size_t(i)]; e < dag.offset[std::size_t(i) + 1]; ++e)
                tasks[std::size_t(i)].precede(tasks[dag.succ[e]]);
        t.built();
        g->run(rt).get();
        t.ran();
        tasks.clear();
        g.reset();
        t.destroyed();
        long long count = 0;
        for (char c : visited) count += c;
        return count;
    });
}
