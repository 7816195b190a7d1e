// CPU time of one sort of the suite's 10^6 strings as a function of where their heap-held
// characters lie: in array order (a fresh copy after malloc_trim, which is what Rust's clone()
// gives the Rayon peer every repetition) or in the order of the last sorted output (copy-assignment
// into the previous repetition's vector, which is what algo_common.hpp's setup `v = input` gives
// the C++ programs after their first repetition). Prints the share of heap-held strings whose
// characters follow the previous heap-held string's within 256 bytes ("locality").
//   ./strlayout promptly|pdq|std|none [n] [reps] [workers]; REUSE=1 for copy-assignment, LOC=1 to print locality.
// Build as strcount.cpp. Output: strings-comparisons-2026-11-28.txt.
#include <promptly/promptly.hpp>
#include <malloc.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>
#include "algo_common.hpp"

static double cpu_ms() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "promptly";
    const std::size_t n = argc > 2 ? std::stoul(argv[2]) : 1000000;
    const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
    promptly::runtime_config cfg;
    cfg.workers = argc > 4 ? unsigned(std::atoi(argv[4])) : 1u;
    const auto input = bench::sort_strings(n);
    promptly::runtime rt{cfg};
    const bool reuse = std::getenv("REUSE") != nullptr;
    std::vector<double> t;
    std::vector<std::string> v;
    for (int r = 0; r < reps; ++r) {
        if (!reuse) {
            v = {};
            malloc_trim(0);  // coalesces the freed strings, so the copy's allocations come in address order
        }
        v = input;
        if (std::getenv("LOC")) {
            const char* prev = nullptr;
            long near = 0, heap = 0;
            for (auto& x : v) {
                const char* d = x.data();
                if (d >= reinterpret_cast<const char*>(&x) && d < reinterpret_cast<const char*>(&x + 1)) continue;  // inline
                ++heap;
                if (prev && d > prev && d - prev < 256) ++near;
                prev = d;
            }
            std::printf("[locality %.2f] ", double(near) / double(heap));
        }
        const double s = cpu_ms();
        if (mode == "promptly") rt.run([&] { promptly::parallel_sort(v); });
        else if (mode == "pdq") { std::ranges::less l; promptly::detail::pdq_sort(v.begin(), v.end(), l); }
        else if (mode == "std") std::sort(v.begin(), v.end());
        t.push_back(cpu_ms() - s);
        if (mode != "none" && !std::is_sorted(v.begin(), v.end())) { std::puts("NOT SORTED"); return 1; }
    }
    std::printf("%s:", mode.c_str());
    for (double x : t) std::printf(" %.1f", x);
    std::sort(t.begin(), t.end());
    std::printf("  median %.1f cpu-ms\n", t[t.size() / 2]);
}
