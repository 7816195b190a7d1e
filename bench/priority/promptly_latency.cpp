// latency-under-load on Promptly (protocol: latency_driver.hpp), and with `--protocol preempt` the
// `preempt` bench (preempt_driver.hpp). One runtime of --workers workers and 3 levels, policy
// --policy (oblivious | prompt | aps | fair, with --rho --delta --quantum-us, and --aps-exact 1 for
// the paper's APS rule exactly: runtime_config::aps.exact).
// Background: one task submitted at level 2 that loops over fib(n), each call with n >= cutoff
// forking both branches with promptly::join (one spawn per call), serial leaves below the cutoff.
// Strand background (preempt): one task at level 2 that loops over rounds of a task_group of
// 2 x workers spawned tasks, each one serial strand, then waits for the round.
// Interaction: the driver thread submits each job with rt.submit(level{0}, ...); the root spins,
// spawns its 4 subtasks into a promptly::task_group (they inherit level 0) and waits.
#include <promptly/promptly.hpp>

#include <vector>

#include "preempt_driver.hpp"
#include "promptly_config.hpp"
#include "promptly_preemption.hpp"

namespace {

long bg_fib(prio::background& bg, long n, std::uint64_t idx) {
    if (n < bg.cutoff) return prio::bg_leaf(bg, n, idx);
    auto [x, y] = promptly::join([&bg, n, idx] { return bg_fib(bg, n - 1, 2 * idx); },
                                 [&bg, n, idx] { return bg_fib(bg, n - 2, 2 * idx + 1); });
    return x + y;
}

struct promptly_rt {
    promptly::runtime rt;
    promptly::future<void> bg_done;
    std::vector<promptly::future<void>> jobs;

    explicit promptly_rt(const promptly::runtime_config& cfg) : rt(cfg) {}

    void start_background(prio::background& bg) {
        bg_done = rt.submit(promptly::level{2}, [&bg] {
            while (!bg.stop.load(std::memory_order_relaxed)) bg.finished(bg_fib(bg, bg.n, 1));
        });
    }
    void start_strands(prio::strand_background& bg) {
        bg_done = rt.submit(promptly::level{2}, [&bg] {
            while (!bg.stop.load(std::memory_order_relaxed)) {
                promptly::task_group round;
                for (long i = 0; i < bg.tasks; ++i) round.spawn([&bg, i] { bg.strand(std::uint64_t(i)); });
                round.wait();
                bg.round_done();
            }
        });
    }
    void stop_background() { bg_done.get(); }

    void submit(prio::job& j) {
        jobs.push_back(rt.submit(promptly::level{0}, [&j] {
            std::uint64_t v = j.root_work();
            std::uint64_t sub[4];
            promptly::task_group tg;
            for (std::uint64_t k = 0; k < 4; ++k) tg.spawn([&j, &sub, k] { sub[k] = j.sub_work(k + 1); });
            tg.wait();
            j.complete(v + sub[0] + sub[1] + sub[2] + sub[3]);
        }));
        if (jobs.size() >= 4096) {  // the driver has waited for older jobs by then; drop handles
            for (auto& f : jobs) f.get();
            jobs.clear();
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const std::string protocol = a.get_string("protocol", "latency");
    if (protocol != "latency" && protocol != "preempt") bench::args::fail("--protocol must be latency or preempt");
    prio::preempt_params pp;
    prio::latency_params& p = pp.job;
    if (protocol == "preempt")
        pp.parse(a);
    else
        p.parse(a);
    const long preemption = a.get_long("preemption", -1);
    if (preemption < -1 || preemption > 1) bench::args::fail("--preemption must be 0 or 1");
    const long threshold_us = a.get_long("preemption-threshold-us", 0);  // 0: the library's default
    if (threshold_us < 0) bench::args::fail("--preemption-threshold-us must be >= 0");
    std::string policy = a.get_string("policy", "aps");
    double rho = prio::get_double(a, "rho", 2.0);
    double delta = prio::get_double(a, "delta", 0.9);
    long quantum_us = a.get_long("quantum-us", 500);
    bool aps_exact = prio::get_flag01(a, "aps-exact");
    promptly::runtime_config cfg;
    bench::read_yield_bounds(a, cfg);
    a.finish();

    cfg.workers = unsigned(p.workers);
    cfg.levels = 3;
    cfg.policy = policy;
    cfg.aps.rho = rho;
    cfg.aps.delta = delta;
    cfg.aps.quantum = std::chrono::microseconds(quantum_us);
    cfg.aps.exact = aps_exact;
    prio::set_preemption(cfg, preemption);
    if (threshold_us > 0) cfg.preemption.threshold = std::chrono::microseconds(threshold_us);
    promptly_rt rt{cfg};
    int rc = 0;
    if (protocol == "preempt") {
        prio::preempt_driver<promptly_rt> d{pp, rt};
        rc = d.run();
    } else {
        prio::latency_driver<promptly_rt> d{p, rt};
        rc = d.run();
    }
    for (auto& f : rt.jobs) f.get();
    return rc;
}
