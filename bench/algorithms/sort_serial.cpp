// Sort benches of suite `algorithms`, sequential reference: std::sort (--stable 0) or
// std::stable_sort (--stable 1) on the calling thread. Every ratio of the suite's targets is
// read against the peers; this one is the 1.0x line of "speedup_vs_std_sort".
#include <algorithm>

#include "algo_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const bench::sort_workload w(a);
    a.get_long("workers", 1);  // one thread by definition
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    a.finish();
    auto sort = [&](auto& v) {
        if (w.stable) std::stable_sort(v.begin(), v.end());
        else std::sort(v.begin(), v.end());
    };
    w.run(warmup, reps, sort, sort);
}
