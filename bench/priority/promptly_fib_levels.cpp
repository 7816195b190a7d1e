// fib-ep / fib-rp of I-Cilk, Sec. 5.1 on Promptly: three fib(n) computations submitted from the
// main thread back to back at level 0 (H), 1 (M) and 2 (L); each level's completion time is
// measured from its own submission to the end of its root task. Calls with n >= --base fork
// both branches with promptly::join; below --base the serial base case runs, calling
// promptly::yield() at every call with n <= 12 (about every microsecond), so that a long strand
// gives its worker up when the policy moves it (the paper's "yield in the serial base case").
//   fib-ep: --base 2 (ample parallelism)
//   fib-rp: --base n (restricted parallelism: the root forks once, into exactly two serial
//           strands per level, fib(n-1) and fib(n-2)). Chosen for 2 workers: a level's
//           parallelism is then fib(n)/fib(n-1) = 1.6, below P = 2 (it keeps both workers busy
//           only while its shorter strand runs), while the three levels together have 6 strands
//           for 2 workers -- the paper's situation (8 strands of 20 cores per level, three levels
//           together about P). One strand would be no parallelism at all; --base n-1 forks
//           fib(n-1) again, three strands with parallelism fib(n)/fib(n-2) = 2.6 > P, which is
//           not restricted on 2 workers.
// --aps-exact 1: the paper's APS rule exactly (runtime_config::aps.exact, docs/priorities.md);
// 0 (default): Promptly's variant. Only meaningful with --policy aps.
//
// fib-ideal is one fib(n) alone, measured in this process in every repetition on a second
// runtime with policy `oblivious` (the paper's Cilk-F reference); `ideal_policy_s` is one fib(n)
// alone on the runtime under test (for aps: the quantum's overhead). Both runtimes stay alive for
// the whole process (an idle runtime's workers sleep); they are used one after the other.
//
// Metrics: region_s = the three-level run (first submission to last completion); H_s, M_s, L_s;
// H/M/L_over_ideal = median over repetitions of (level time / that repetition's fib-ideal);
// ideal_s, ideal_policy_s, ideal_policy_over_ideal.
// --trace FILE: after the measured repetitions, one more (untimed) three-level run on a fresh
// runtime with runtime_config::allotment_trace = FILE (for the allotment timeline plot).
#include <promptly/promptly.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "bench_common.hpp"
#include "prio_common.hpp"

static long base_case = 2;

static long fib_serial_yielding(long n) {
    if (n <= 12) {
        promptly::yield();
        return bench::fib_serial(n);
    }
    return fib_serial_yielding(n - 1) + fib_serial_yielding(n - 2);
}

static long pfib(long n) {
    if (n < base_case) return fib_serial_yielding(n);
    auto [x, y] = promptly::join([n] { return pfib(n - 1); }, [n] { return pfib(n - 2); });
    return x + y;
}

struct three_result {
    long value[3];
    double level_s[3];  // completion time of each level from its own submission
    double total_s;     // first submission to last completion
    prio::clock::time_point submitted[3], done[3];
};

static three_result run_three(promptly::runtime& rt, long n) {
    prio::clock::time_point submitted[3], done[3];
    promptly::future<long> f[3];
    for (unsigned l = 0; l < 3; ++l) {
        submitted[l] = prio::clock::now();
        f[l] = rt.submit(promptly::level{l}, [n, l, &done] {
            long r = pfib(n);
            done[l] = prio::clock::now();
            return r;
        });
    }
    three_result r{};
    for (unsigned l = 0; l < 3; ++l) r.value[l] = f[l].get();
    for (unsigned l = 0; l < 3; ++l) r.submitted[l] = submitted[l], r.done[l] = done[l];
    auto last = done[0];
    for (unsigned l = 0; l < 3; ++l) {
        r.level_s[l] = prio::seconds_since(submitted[l], done[l]);
        last = std::max(last, done[l]);
    }
    r.total_s = prio::seconds_since(submitted[0], last);
    return r;
}

static double run_alone(promptly::runtime& rt, long n, long expect) {
    auto t0 = prio::clock::now();
    long v = rt.submit(promptly::level{0}, [n] { return pfib(n); }).get();
    double s = prio::seconds_since(t0, prio::clock::now());
    if (v != expect) bench::args::fail("fib-ideal computed " + std::to_string(v) + ", expected " + std::to_string(expect));
    return s;
}

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    long n = a.get_long("n", 30);
    base_case = std::max(2L, a.get_long("base", 2));
    std::string policy = a.get_string("policy", "aps");
    double rho = prio::get_double(a, "rho", 2.0);
    double delta = prio::get_double(a, "delta", 0.9);
    long quantum_us = a.get_long("quantum-us", 500);
    bool aps_exact = prio::get_flag01(a, "aps-exact");
    std::string trace = a.get_string("trace", "");
    long workers = a.get_long("workers", 2);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    a.finish();
    if (reps < 1) bench::args::fail("--reps must be >= 1");

    promptly::runtime_config cfg;
    cfg.workers = unsigned(workers);
    cfg.levels = 3;
    cfg.policy = policy;
    cfg.aps.rho = rho;
    cfg.aps.delta = delta;
    cfg.aps.quantum = std::chrono::microseconds(quantum_us);
    cfg.aps.exact = aps_exact;
    promptly::runtime_config ideal_cfg = cfg;
    ideal_cfg.policy = "oblivious";

    const long expect = prio::fib_value(n);
    std::vector<double> total, lvl[3], ratio[3], ideal, ideal_pol, utils;
    {
        promptly::runtime rt_ideal{ideal_cfg};
        promptly::runtime rt{cfg};
        for (long i = 0; i < warmup + reps; ++i) {
            double id = run_alone(rt_ideal, n, expect);
            double idp = run_alone(rt, n, expect);
            double c0 = bench::cpu_seconds_self();
            three_result r = run_three(rt, n);
            double c1 = bench::cpu_seconds_self();
            for (long v : r.value)
                if (v != expect)
                    bench::args::fail("a level computed " + std::to_string(v) + ", expected " + std::to_string(expect));
            std::fprintf(stderr, "%s rep %ld: ideal %.3f s, ideal(%s) %.3f s, H %.3f M %.3f L %.3f s (x%.2f x%.2f x%.2f)\n",
                         i < warmup ? "warm-up" : "timed", i, id, policy.c_str(), idp, r.level_s[0], r.level_s[1],
                         r.level_s[2], r.level_s[0] / id, r.level_s[1] / id, r.level_s[2] / id);
            if (i < warmup) continue;
            total.push_back(r.total_s);
            ideal.push_back(id);
            ideal_pol.push_back(idp);
            utils.push_back((c1 - c0) / r.total_s);
            for (int l = 0; l < 3; ++l) {
                lvl[l].push_back(r.level_s[l]);
                ratio[l].push_back(r.level_s[l] / id);
            }
        }
        promptly::runtime_stats st = rt.stats();
        std::fprintf(stderr, "stats (%s): %llu decisions;", st.policy.c_str(), (unsigned long long)st.decisions);
        for (std::size_t l = 0; l < st.levels.size(); ++l)
            std::fprintf(stderr, " level %zu: %llu tasks, %llu switches in, work %.2f s, look %.2f s;", l,
                         (unsigned long long)st.levels[l].tasks_run, (unsigned long long)st.levels[l].switches_in,
                         st.levels[l].work_s, st.levels[l].look_s);
        std::fprintf(stderr, "\n");
    }
    if (!trace.empty()) {  // one untimed three-level run with the allotment trace on
        promptly::runtime_config tcfg = cfg;
        tcfg.allotment_trace = trace;
        if (auto dir = std::filesystem::path(trace).parent_path(); !dir.empty()) std::filesystem::create_directories(dir);
        auto t0 = prio::clock::now();  // the trace's t_s counts from the runtime's start, just after this
        promptly::runtime rt{tcfg};
        three_result r = run_three(rt, n);
        rt.shutdown();
        std::fprintf(stderr, "traced run (%s): H %.3f M %.3f L %.3f s\n", trace.c_str(), r.level_s[0], r.level_s[1],
                     r.level_s[2]);
        // Sidecar for the plot: when each level was submitted and finished, on the trace's clock
        // (to within the runtime's start-up, well under a millisecond).
        if (std::FILE* side = std::fopen((trace + ".json").c_str(), "w")) {
            std::fprintf(side, "{\"policy\": \"%s\", \"workers\": %ld, \"n\": %ld, \"base\": %ld, \"rho\": %g, "
                               "\"quantum_us\": %ld, \"delta\": %g, \"aps_exact\": %s, \"ideal_s\": %.6f, \"submitted_s\": [%.6f, %.6f, %.6f], "
                               "\"done_s\": [%.6f, %.6f, %.6f]}\n",
                         policy.c_str(), workers, n, base_case, rho, quantum_us, delta, aps_exact ? "true" : "false",
                         bench::median(ideal),
                         prio::seconds_since(t0, r.submitted[0]), prio::seconds_since(t0, r.submitted[1]),
                         prio::seconds_since(t0, r.submitted[2]), prio::seconds_since(t0, r.done[0]),
                         prio::seconds_since(t0, r.done[1]), prio::seconds_since(t0, r.done[2]));
            std::fclose(side);
        }
    }

    bench::region_stats s{bench::median(total), *std::min_element(total.begin(), total.end()), bench::median(utils)};
    double id = bench::median(ideal), idp = bench::median(ideal_pol);
    std::string result = "[" + std::to_string(expect) + ", " + std::to_string(expect) + ", " + std::to_string(expect) + "]";
    bench::print_result(result, s,
                        {{"H_s", bench::median(lvl[0])},
                         {"M_s", bench::median(lvl[1])},
                         {"L_s", bench::median(lvl[2])},
                         {"H_over_ideal", bench::median(ratio[0])},
                         {"M_over_ideal", bench::median(ratio[1])},
                         {"L_over_ideal", bench::median(ratio[2])},
                         {"ideal_s", id},
                         {"ideal_policy_s", idp},
                         {"ideal_policy_over_ideal", idp / id}});
}
