// One compute kernel of the fairly prompt paper Sec. 6.2.2 alone (bench/fair/README.md): --kernel
// fib|uts|strassen|bfs|sort at --scale full|quick|test, on a runtime of --workers workers with
// policy --policy, the root at priority --level (runtime_config::levels = level + 1); each timed
// repetition is one rt.run(level{L}, kernel.run). --serial 1 runs the serial version instead,
// with no runtime. The serial checksum is computed up front, twice (metric serial_s = the
// second, warm run's time) and every repetition's checksum must equal it. RESULT: result = the
// checksum; metrics also speedup = serial_s / region_s (the fairly prompt paper's Table 2).
#include <promptly/promptly.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "bench_common.hpp"
#include "kernels.hpp"
#include "promptly_config.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const std::string name = a.get_string("kernel", "fib"), scale = a.get_string("scale", "full");
    const bool serial = a.get_long("serial", 0) != 0;
    const long lvl = a.get_long("level", 0);
    promptly::runtime_config cfg = bench::promptly_config(a);
    cfg.policy = a.get_string("policy", "oblivious");
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    a.finish();
    if (lvl < 0) bench::args::fail("--level must be >= 0");
    cfg.levels = unsigned(lvl + 1);
    try {
        promptly::validate(cfg);
    } catch (const std::invalid_argument& e) {
        bench::args::fail(std::string("invalid runtime configuration: ") + e.what());
    }

    try {
        std::unique_ptr<fair_kernels::kernel> k;
        try {
            k = fair_kernels::make_kernel(name, scale);
        } catch (const std::invalid_argument& e) {
            bench::args::fail(e.what());
        }
        const std::uint64_t expect = k->run_serial();
        // Ts is timed on a second serial run: the first one in the process takes the first
        // touches of the kernel's temporaries (about 1.4x the later runs for quick-scale
        // Strassen here), which the timed parallel runs, after their warm-up, do not.
        const auto t0 = std::chrono::steady_clock::now();
        const std::uint64_t again = k->run_serial();
        const double serial_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (again != expect) {
            std::fprintf(stderr, "error: kernel %s: two serial runs computed %llu and %llu\n", name.c_str(),
                         (unsigned long long)expect, (unsigned long long)again);
            return 1;
        }

        std::optional<promptly::runtime> rt;
        if (!serial) rt.emplace(cfg);
        auto [answer, stats] = bench::measure(warmup, reps, [&] {
            const std::uint64_t r = serial ? k->run_serial() : rt->run(promptly::level{unsigned(lvl)}, [&] { return k->run(); });
            if (r != expect) {
                std::fprintf(stderr, "error: kernel %s (%s) computed checksum %llu, the serial version %llu\n", name.c_str(),
                             serial ? "serial" : "parallel", (unsigned long long)r, (unsigned long long)expect);
                std::exit(1);
            }
            return r;
        });
        // speedup = Ts / Tp, the fairly prompt paper's Table 2 (Ts: the serial run above).
        bench::print_result(std::to_string(answer), stats,
                            {{"serial_s", serial_s}, {"speedup", serial_s / stats.region_s}});
    } catch (const std::exception& e) {  // a kernel's own check failed (e.g. unsorted output)
        std::fprintf(stderr, "error: kernel %s: %s\n", name.c_str(), e.what());
        return 1;
    }
}
