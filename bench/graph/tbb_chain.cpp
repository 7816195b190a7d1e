// graph-chain on oneTBB flow_graph: a chain of --n continue_nodes, each incrementing a counter,
// linked by make_edge; the first is started with try_put, then wait_for_all. The shape of
// Taskflow's benchmarks/linear_chain/tbb.cpp.
#include "graph_bench.hpp"
#include "tbb_common.hpp"

int main(int argc, char** argv) {
    using namespace tbb::flow;
    bench::args a(argc, argv);
    const long n = a.get_long("n", 1L << 20);
    const long workers = a.get_long("workers", 2);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();
    if (n < 1) bench::args::fail("--n must be >= 1");
    bench::graph::tbb_setup tbb(workers);

    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        long long counter = 0;
        tbb.arena.execute([&] {
            t.start();
            auto g = std::make_unique<graph>();
            std::vector<std::unique_ptr<bench::graph::tbb_node>> nodes(static_cast<std::size_t>(n));
            for (long i = 0; i < n; ++i)
                nodes[std::size_t(i)] =
                    std::make_unique<bench::graph::tbb_node>(*g, [&counter](const continue_msg&) { ++counter; });
            for (long i = 1; i < n; ++i) make_edge(*nodes[std::size_t(i - 1)], *nodes[std::size_t(i)]);
            t.built();
            nodes[0]->try_put(continue_msg());
            g->wait_for_all();
            t.ran();
            nodes.clear();
            g.reset();
            t.destroyed();
        });
        return counter;
    });
}
