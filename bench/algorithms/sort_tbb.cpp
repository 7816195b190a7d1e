// Sort benches of suite `algorithms` on oneTBB: --impl tbb is tbb::parallel_sort (unstable
// only: oneTBB has no stable sort); --impl std-par is std::sort / std::stable_sort with
// std::execution::par, which libstdc++ (GCC >= 9) runs on its oneTBB backend. Both run in a
// task_arena of --workers slots, with global_control capping TBB's pool to match (the PSTL
// backend's tasks run in the arena that calls it). run_util shows that std-par really ran on
// both workers.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <execution>

#include "algo_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const bench::sort_workload w(a);
    const std::string impl = a.get_string("impl", "tbb");
    long workers = a.get_long("workers", 2);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    a.finish();
    if (impl != "tbb" && impl != "std-par") bench::args::fail("--impl must be tbb or std-par");
    if (impl == "tbb" && w.stable) bench::args::fail("oneTBB has no stable sort: use --impl std-par");

    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers));
    tbb::task_arena arena{int(workers)};
    auto sort = [&](auto& v) {
        arena.execute([&] {
            if (impl == "tbb") tbb::parallel_sort(v.begin(), v.end());
            else if (w.stable) std::stable_sort(std::execution::par, v.begin(), v.end());
            else std::sort(std::execution::par, v.begin(), v.end());
        });
    };
    w.run(warmup, reps, sort, sort);
}
