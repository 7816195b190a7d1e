// graph-tree on oneTBB flow_graph: a complete binary tree of --n = 2^k - 1 continue_nodes;
// node i precedes 2i+1 and 2i+2 and marks itself done. Started with try_put on the root.
#include "graph_bench.hpp"
#include "tbb_common.hpp"

int main(int argc, char** argv) {
    using namespace tbb::flow;
    bench::args a(argc, argv);
    const long n = a.get_long("n", (1L << 20) - 1);
    const long workers = a.get_long("workers", 2);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();
    if (n < 1 || ((n + 1) & n) != 0) bench::args::fail("--n must be 2^k - 1");
    bench::graph::tbb_setup tbb(workers);

    std::vector<char> done(static_cast<std::size_t>(n), 0);
    bench::graph::run_and_report(warmup, reps, [&](bench::graph::phase_timer& t) {
        std::fill(done.begin(), done.end(), 0);
        tbb.arena.execute([&] {
            t.start();
            auto g = std::make_unique<graph>();
            std::vector<std::unique_ptr<bench::graph::tbb_node>> nodes(static_cast<std::size_t>(n));
            for (long i = 0; i < n; ++i) {
                char* mark = &done[std::size_t(i)];
                nodes[std::size_t(i)] =
                    std::make_unique<bench::graph::tbb_node>(*g, [mark](const continue_msg&) { *mark = 1; });
            }
            for (long i = 0; 2 * i + 2 < n; ++i) {
                make_edge(*nodes[std::size_t(i)], *nodes[std::size_t(2 * i + 1)]);
                make_edge(*nodes[std::size_t(i)], *nodes[std::size_t(2 * i + 2)]);
            }
            t.built();
            nodes[0]->try_put(continue_msg());
            g->wait_for_all();
            t.ran();
            nodes.clear();
            g.reset();
            t.destroyed();
        });
        long long visited = 0;
        for (char c : done) visited += c;
        return visited;
    });
}
