// Automatic-grain benches of suite `algorithms`, sequential reference: the same per-index code
// (grain_workload.hpp) in one loop on the calling thread.
#include "grain_workload.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::grain_workload w(a, false);
    a.get_long("workers", 1);  // one thread by definition
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();
    const std::size_t n = w.n;
    w.run(warmup, reps, [&](std::size_t) -> std::uint64_t {
        std::uint64_t s = 0;
        if (w.kind == "sum") {
            for (std::size_t i = 0; i < n; ++i) s += w.sum_at(i);
        } else if (w.kind == "map") {
            for (std::size_t i = 0; i < n; ++i) w.map_at(i);
        } else if (w.kind == "irregular") {
            for (std::size_t i = 0; i < n; ++i) w.irregular_at(i);
        } else {
            w.blur_tile(1, n - 1, 1, n - 1);
        }
        return s;
    });
}
