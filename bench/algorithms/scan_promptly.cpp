// Scan bench of suite `algorithms` on Promptly: promptly::parallel_inclusive_scan of n int64
// values into a second array (algo_common.hpp), each timed repetition one runtime::run().
#include <promptly/promptly.hpp>

#include "algo_common.hpp"
#include "promptly_config.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::scan_workload w(a);
    const promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();

    promptly::runtime rt{cfg};
    w.run(warmup, reps, [&](const auto& in, auto& out) {
        rt.run([&] { promptly::parallel_inclusive_scan(in.begin(), in.end(), out.begin()); });
    });
}
