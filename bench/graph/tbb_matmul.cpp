// graph-matmul on oneTBB flow_graph: n continue_nodes initialise one row of A, B and C each, a
// barrier continue_node follows all of them, n continue_nodes multiply one row each after it.
// Every init node is started with try_put.
#include "graph_bench.hpp"
#include "tbb_common.hpp"

int main(int argc, char** argv) {
    using namespace tbb::flow;
    bench::args a(argc, argv);
    const long n = a.get_long("n", 1024);
    const long workers = a.get_long("workers", 2);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    a.finish();
    if (n < 1) bench::args::fail("--n must be >= 1");
    bench::graph::tbb_setup tbb(workers);

    bench::graph::matrices m(n);
    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        m.poison();
        tbb.arena.execute([&] {
            using bench::graph::tbb_node;
            t.start();
            auto g = std::make_unique<graph>();
            std::vector<std::unique_ptr<tbb_node>> init(static_cast<std::size_t>(n)), mul(static_cast<std::size_t>(n));
            auto barrier = std::make_unique<tbb_node>(*g, [](const continue_msg&) {});
            for (long i = 0; i < n; ++i) {
                init[std::size_t(i)] = std::make_unique<tbb_node>(*g, [&m, i](const continue_msg&) { m.init_row(i); });
                mul[std::size_t(i)] = std::make_unique<tbb_node>(*g, [&m, i](const continue_msg&) { m.multiply_row(i); });
                make_edge(*init[std::size_t(i)], *barrier);
                make_edge(*barrier, *mul[std::size_t(i)]);
            }
            t.built();
            for (auto& node : init) node->try_put(continue_msg());
            g->wait_for_all();
            t.ran();
            init.clear();
            mul.clear();
            barrier.reset();
            g.reset();
            t.destroyed();
        });
        return m.checksum();
    });
}
