// The reduce benches (reduce_workload.hpp) on oneTBB: tbb::parallel_reduce over a
// blocked_range, in its idiomatic functional form (the body loops over its sub-range from the
// running sum, as TBB's documentation writes it). --partitioner auto (TBB's default:
// blocked_range grain 1, auto_partitioner; --grain ignored) or simple (simple_partitioner with
// blocked_range grain --grain: halving down to <= grain, as Promptly's parallel_reduce).
// Worker count: a task_arena of --workers slots, global_control capping TBB's pool to match.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <functional>

#include "reduce_workload.hpp"

template <class Element>
static std::uint64_t reduce(std::size_t n, std::size_t grain, bool simple, Element element) {
    auto body = [&](const tbb::blocked_range<std::size_t>& r, std::uint64_t acc) {
        for (std::size_t i = r.begin(); i != r.end(); ++i) acc += element(i);
        return acc;
    };
    if (simple)
        return tbb::parallel_reduce(tbb::blocked_range<std::size_t>(0, n, grain), std::uint64_t{0}, body,
                                    std::plus<>{}, tbb::simple_partitioner{});
    return tbb::parallel_reduce(tbb::blocked_range<std::size_t>(0, n), std::uint64_t{0}, body, std::plus<>{});
}

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::reduction w(a);
    long workers = a.get_long("workers", 2);
    const std::string partitioner = a.get_string("partitioner", "auto");
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();
    if (partitioner != "auto" && partitioner != "simple") bench::args::fail("--partitioner must be auto or simple");
    const bool simple = partitioner == "simple";

    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers));
    tbb::task_arena arena{int(workers)};
    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        std::size_t n = w.n;
        bench::opaque(n);
        return arena.execute([&] {
            if (w.kind == "sum") return reduce(n, w.grain, simple, [&](std::size_t i) { return w.element_sum(i); });
            return reduce(n, w.grain, simple, [&](std::size_t i) { return w.element_map(i); });
        });
    });
    bench::print_result(std::to_string(answer), stats);
}
