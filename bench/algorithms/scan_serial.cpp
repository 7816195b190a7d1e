// Scan bench of suite `algorithms`, sequential reference: std::inclusive_scan on the calling
// thread.
#include <numeric>

#include "algo_common.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::scan_workload w(a);
    a.get_long("workers", 1);  // one thread by definition
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();
    w.run(warmup, reps, [](const auto& in, auto& out) { std::inclusive_scan(in.begin(), in.end(), out.begin()); });
}
