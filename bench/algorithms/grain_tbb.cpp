// Automatic-grain benches of suite `algorithms` on oneTBB (grain_workload.hpp): the idiomatic
// forms with the default auto_partitioner and grain-1 ranges: parallel_reduce over a
// blocked_range, parallel_for over a blocked_range, and over a blocked_range2d for blur. In a
// task_arena of --workers slots, global_control capping TBB's pool.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/blocked_range2d.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/task_arena.h>

#include <functional>

#include "grain_workload.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::grain_workload w(a, false);
    long workers = a.get_long("workers", 2);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();

    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers));
    tbb::task_arena arena{int(workers)};
    const std::size_t n = w.n;
    using range = tbb::blocked_range<std::size_t>;
    w.run(warmup, reps, [&](std::size_t) -> std::uint64_t {
        return arena.execute([&]() -> std::uint64_t {
            if (w.kind == "sum")
                return tbb::parallel_reduce(range(0, n), std::uint64_t{0}, [&](const range& r, std::uint64_t acc) {
                    for (std::size_t i = r.begin(); i != r.end(); ++i) acc += w.sum_at(i);
                    return acc;
                }, std::plus<>{});
            if (w.kind == "map") {
                tbb::parallel_for(range(0, n), [&](const range& r) {
                    for (std::size_t i = r.begin(); i != r.end(); ++i) w.map_at(i);
                });
            } else if (w.kind == "irregular") {
                tbb::parallel_for(range(0, n), [&](const range& r) {
                    for (std::size_t i = r.begin(); i != r.end(); ++i) w.irregular_at(i);
                });
            } else {
                tbb::parallel_for(tbb::blocked_range2d<std::size_t>(1, n - 1, 1, n - 1),
                                  [&](const tbb::blocked_range2d<std::size_t>& t) {
                                      w.blur_tile(t.rows().begin(), t.rows().end(), t.cols().begin(), t.cols().end());
                                  });
            }
            return 0;
        });
    });
}
