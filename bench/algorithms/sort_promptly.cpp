// Sort benches of suite `algorithms` on Promptly: promptly::parallel_sort (--stable 0) or
// promptly::parallel_stable_sort (--stable 1) of the input (algo_common.hpp), each timed
// repetition one runtime::run() with --workers workers.
#include <promptly/promptly.hpp>

#include "algo_common.hpp"
#include "promptly_config.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const bench::sort_workload w(a);
    const promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    a.finish();

    promptly::runtime rt{cfg};
    auto sort = [&](auto& v) {
        rt.run([&] {
            if (w.stable) promptly::parallel_stable_sort(v);
            else promptly::parallel_sort(v);
        });
    };
    w.run(warmup, reps, sort, sort);
}
