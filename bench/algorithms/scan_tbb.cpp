// Scan bench of suite `algorithms` on oneTBB: --impl tbb is tbb::parallel_scan in its
// functional form (the body scans its sub-range from the running sum and writes only when
// is_final_scan, as oneTBB's documentation writes a prefix sum; auto_partitioner);
// --impl std-par is std::inclusive_scan(std::execution::par, ...) on libstdc++'s oneTBB
// backend. Both in a task_arena of --workers slots, global_control capping TBB's pool.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_scan.h>
#include <oneapi/tbb/task_arena.h>

#include <execution>
#include <functional>
#include <numeric>

#include "algo_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::scan_workload w(a);
    const std::string impl = a.get_string("impl", "tbb");
    long workers = a.get_long("workers", 2);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();
    if (impl != "tbb" && impl != "std-par") bench::args::fail("--impl must be tbb or std-par");

    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers));
    tbb::task_arena arena{int(workers)};
    w.run(warmup, reps, [&](const std::vector<std::int64_t>& in, std::vector<std::int64_t>& out) {
        arena.execute([&] {
            if (impl == "std-par") {
                std::inclusive_scan(std::execution::par, in.begin(), in.end(), out.begin());
                return;
            }
            tbb::parallel_scan(
                tbb::blocked_range<std::size_t>(0, in.size()), std::int64_t{0},
                [&](const tbb::blocked_range<std::size_t>& r, std::int64_t sum, bool is_final) {
                    for (std::size_t i = r.begin(); i != r.end(); ++i) {
                        sum += in[i];
                        if (is_final) out[i] = sum;
                    }
                    return sum;
                },
                std::plus<>{});
        });
    });
}
