// Server of suite `fair` (runtime `promptly-fair`): the fairly prompt paper Sec. 6.2.3's three-priority
// benchmark on one Promptly runtime with the `fair` policy, driven by bench_io_driver (protocol:
// ../io/echo_server.hpp, ../io/README.md).
//
//   level 0            the interactive kernel (terminal or network echo, ../io/promptly_echo.hpp)
//   middle levels      a time sink: parallel fib rounds that never run out of work, so that it
//                      collects every cycle donated by an idle level (the fairly prompt paper Sec. 6.2.3)
//   the last level     the compute kernel (--kernel, fair_kernels::make_kernel)
//
// --criterion H-M-L (e.g. 50-25-25) gives one weight per level, so its length is the number of
// levels: 3 for the stretch and response experiments, 2 ("100-0") for winner-take-all without a
// time sink (the fairly prompt paper Table 3). The server alternates the kernel under --baseline (default: all
// weight on the kernel's level, e.g. 0-0-100; no interactions are sent) and under --criterion
// (the driver sends interactions): measured stretch = loaded time / baseline time, both with the
// time sink and the listener present, as the fairly prompt paper measures T_b with criterion 0-0-100.
// After each loaded run it reports, per level L, "metric share_LL_{sampled,received} X" from
// runtime::stats(): the accounting of cycles received vs. the criterion.
//
// Options (besides the driver's --mode --workers --warmup --reps --min-loaded-ms): --kernel K
// --scale full|quick|test --criterion H-M-L [--baseline H-M-L] --round-us R
// --sampling systematic|independent (runtime_config::fair.sampling), and --n/--cutoff: the size
// of each time-sink fib round (fib(n), serial below cutoff).
#include <promptly/promptly.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "../io/promptly_echo.hpp"
#include "kernels.hpp"

namespace {

long sink_cutoff = 16;

long sink_fib(long n) {
    if (n < sink_cutoff) return bench::fib_serial(n);
    auto [x, y] = promptly::join([n] { return sink_fib(n - 1); }, [n] { return sink_fib(n - 2); });
    return x + y;
}

}  // namespace

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    echo::options o;
    o.mode = a.get_string("mode", "net");
    o.workers = a.get_long("workers", 2);
    o.n = a.get_long("n", 30);
    o.cutoff = a.get_long("cutoff", 16);
    o.warmup = a.get_long("warmup", 1);
    o.reps = a.get_long("reps", 2);
    o.min_loaded_ms = a.get_long("min-loaded-ms", 0);
    o.policy = a.get_string("policy", "fair");
    const std::string kernel_name = a.get_string("kernel", "fib");
    const std::string scale = a.get_string("scale", "full");
    const std::vector<long long> criterion = echo::parse_weights(a.get_string("criterion", "50-25-25"), "criterion");
    const long round_us = a.get_long("round-us", 5000);
    const std::string sampling = a.get_string("sampling", "systematic");
    std::vector<long long> baseline(criterion.size(), 0);
    baseline.back() = 100;
    if (std::string b = a.get_string("baseline", ""); !b.empty()) baseline = echo::parse_weights(b, "baseline");
    a.finish();
    if (o.policy != "fair") bench::args::fail("this server runs the fair policy only (--policy fair)");
    if (baseline.size() != criterion.size()) bench::args::fail("--baseline and --criterion need as many levels");
    if (o.mode != "net" && o.mode != "term") bench::args::fail("--mode must be net or term");
    if (sampling != "systematic" && sampling != "independent")
        bench::args::fail("--sampling must be systematic or independent, not '" + sampling + "'");
    sink_cutoff = std::max(2L, o.cutoff);

    promptly::runtime_config cfg;
    cfg.workers = unsigned(o.workers);
    cfg.levels = unsigned(criterion.size());
    cfg.policy = "fair";
    cfg.fair.round = std::chrono::microseconds(round_us);
    // systematic: Promptly's central draw per round; independent: each worker draws its own
    // primary level at its own round boundaries, as the fairly prompt paper's Sec. 4 does.
    cfg.fair.sampling =
        sampling == "independent" ? promptly::fair_sampling::independent : promptly::fair_sampling::systematic;
    cfg.fair.weights = baseline;
    try {
        promptly::validate(cfg);
        cfg.fair.weights = criterion;
        promptly::validate(cfg);
    } catch (const std::invalid_argument& e) {
        bench::args::fail(e.what());
    }
    cfg.fair.weights = baseline;

    std::unique_ptr<fair_kernels::kernel> kernel;
    try {
        kernel = fair_kernels::make_kernel(kernel_name, scale);
    } catch (const std::exception& e) {
        bench::args::fail(e.what());
    }
    const auto serial_t0 = std::chrono::steady_clock::now();
    const std::uint64_t expected = kernel->run_serial();  // every parallel run is checked against it
    const double serial_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - serial_t0).count();

    promptly::runtime rt{cfg};
    const unsigned kernel_level = cfg.levels - 1;
    echo::promptly_interactive interactive(rt, o.mode, 0);
    // The checked reference run's time. It is the kernel's first run in the process (cold
    // temporaries), so the suite's speedups take Ts from bench_fair_kernel's warm serial run.
    echo::say("metric serial_s " + std::to_string(serial_s));

    // The time sink: one driver task per middle level, each running parallel fib rounds until
    // the end (a yield between rounds is a strand boundary even when fib(n) is below the cutoff).
    std::atomic<bool> stop_sink{false};
    std::vector<promptly::future<long>> sinks;
    for (unsigned l = 1; l < kernel_level; ++l)
        sinks.push_back(rt.submit(promptly::level{l}, [&stop_sink, n = o.n] {
            long rounds = 0;
            // relaxed: a flag polled between rounds; the sink's result is read through its
            // future (which synchronises), and a round more or less changes nothing.
            while (!stop_sink.load(std::memory_order_relaxed)) {
                long v = sink_fib(n);
                bench::opaque(v);
                promptly::yield();
                ++rounds;
            }
            return rounds;
        }));

    echo::run_phases(o, [&](const char* phase) {
        const bool loaded = phase[0] == 'l';
        rt.set_fairness(loaded ? criterion : baseline);  // restarts the accounting too
        const std::uint64_t v = rt.run(promptly::level{kernel_level}, [&] { return kernel->run(); });
        if (v != expected) {
            std::fprintf(stderr, "fair_echo: %s returned %llu, serial %llu\n", kernel_name.c_str(),
                         (unsigned long long)v, (unsigned long long)expected);
            std::exit(2);
        }
        if (loaded) {
            const promptly::runtime_stats st = rt.stats();
            for (std::size_t l = 0; l < st.levels.size(); ++l) {
                char line[128];
                std::snprintf(line, sizeof line, "metric share_L%zu_sampled %.4f", l, st.levels[l].sampled_share);
                echo::say(line);
                std::snprintf(line, sizeof line, "metric share_L%zu_received %.4f", l, st.levels[l].received_share);
                echo::say(line);
            }
        }
        return long(v & 0x3fffffffffffffffULL);  // the driver's answer is a signed long
    });

    stop_sink = true;
    for (auto& s : sinks) (void)s.get();
    interactive.finish();
}
