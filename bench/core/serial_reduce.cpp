// The reduce benches (reduce_workload.hpp) without any runtime: one plain loop. The serial
// reference of speedup_vs_serial. --workers and --grain are accepted (the protocol passes them)
// but ignored: one thread, one piece.
#include "reduce_workload.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::reduction w(a);
    a.get_long("workers", 1);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();

    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        std::size_t n = w.n;
        bench::opaque(n);
        std::uint64_t acc = 0;
        if (w.kind == "sum") {
            for (std::size_t i = 0; i < n; ++i) acc += w.element_sum(i);
        } else {
            for (std::size_t i = 0; i < n; ++i) acc += w.element_map(i);
        }
        return acc;
    });
    bench::print_result(std::to_string(answer), stats);
}
