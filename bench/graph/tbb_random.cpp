// graph-random on oneTBB flow_graph: the random DAG of graph_bench.hpp as continue_nodes, each
// marking itself visited; every source (no predecessor) is started with try_put.
#include "graph_bench.hpp"
#include "tbb_common.hpp"

int main(int argc, char** argv) {
    using namespace tbb::flow;
    bench::args a(argc, argv);
    const long n = a.get_long("n", 1000000);
    const long seed = a.get_long("seed", 1);
    const long workers = a.get_long("workers", 2);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();
    if (n < 1) bench::args::fail("--n must be >= 1");
    bench::graph::tbb_setup tbb(workers);

    const bench::graph::random_dag dag{static_cast<std::uint32_t>(n), static_cast<std::uint64_t>(seed)};
    std::vector<char> has_pred(static_cast<std::size_t>(n), 0);
    for (std::uint32_t j : dag.succ) has_pred[j] = 1;
    std::vector<char> visited(static_cast<std::size_t>(n), 0);
    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        std::fill(visited.begin(), visited.end(), 0);
        tbb.arena.execute([&] {
            t.start();
            auto g = std::make_unique<graph>();
            std::vector<std::unique_ptr<bench::graph::tbb_node>> nodes(static_cast<std::size_t>(n));
            for (long i = 0; i < n; ++i) {
                char* mark = &visited[std::size_t(i)];
                nodes[std::size_t(i)] =
                    std::make_unique<bench::graph::tbb_node>(*g, [mark](const continue_msg&) { *mark = 1; });
            }
            for (long i = 0; i < n; ++i)
                for (std::uint32_t e = dag.offset[std::size_t(i)]; e < dag.offset[std::size_t(i) + 1]; ++e)
                    make_edge(*nodes[std::size_t(i)], *nodes[dag.succ[e]]);
            t.built();
            for (long i = 0; i < n; ++i)
                if (!has_pred[std::size_t(i)]) nodes[std::size_t(i)]->try_put(continue_msg());
            g->wait_for_all();
            t.ran();
            nodes.clear();
            g.reset();
            t.destroyed();
        });
        long long count = 0;
        for (char c : visited) count += c;
        return count;
    });
}
