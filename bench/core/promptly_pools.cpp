// Pools made and removed at run time, and workers moved between pools
// (docs/policies.md). --what:
//   create-remove-empty   n times: create a pool, remove it (nothing ran in it)
//   create-remove-task    n times: create a pool, run one task in it and wait, remove it
//   switch                n times, on one worker, under `prompt`: a task in a less urgent pool
//                         touches a future computed in a more urgent one, so the worker moves
//                         to the urgent pool and back (two moves, each decided by the policy)
// Per operation: p50/p99 of create_us, remove_us, op_us (one whole iteration), and the
// runtime's own event-to-decision latency (decision_p50_us/p99_us, runtime_stats).
#include <promptly/promptly.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "promptly_config.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double us_since(clock_type::time_point t0, clock_type::time_point t1) {
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

struct samples {
    std::vector<double> create, remove, op;
};

}  // namespace

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const std::string what = a.get_string("what", "create-remove-empty");
    const long n = a.get_long("n", 100000);
    promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    a.finish();
    if (what != "create-remove-empty" && what != "create-remove-task" && what != "switch")
        bench::args::fail("--what must be create-remove-empty, create-remove-task or switch");
    cfg.policy = "prompt";
    cfg.levels = 2;

    promptly::runtime rt{cfg};
    samples last;
    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        samples s;
        long done = 0;
        if (what == "switch") {
            // Level 1 loops; each iteration needs a value computed at level 0.
            s.op.reserve(static_cast<std::size_t>(n));
            done = rt.run(promptly::level{1}, [&] {
                long sum = 0;
                for (long i = 0; i < n; ++i) {
                    const auto t0 = clock_type::now();
                    sum += promptly::async(promptly::level{0}, [] { return 1L; }).get();
                    s.op.push_back(us_since(t0, clock_type::now()));
                }
                return sum;
            });
        } else {
            s.create.reserve(static_cast<std::size_t>(n));
            s.remove.reserve(static_cast<std::size_t>(n));
            s.op.reserve(static_cast<std::size_t>(n));
            const bool with_task = what == "create-remove-task";
            for (long i = 0; i < n; ++i) {
                const auto t0 = clock_type::now();
                const promptly::pool p = rt.create_pool({.rank = 1});
                const auto t1 = clock_type::now();
                if (with_task) done += rt.submit(p, [] { return 1L; }).get();
                const auto t2 = clock_type::now();
                rt.remove_pool(p);
                const auto t3 = clock_type::now();
                s.create.push_back(us_since(t0, t1));
                s.remove.push_back(us_since(t2, t3));
                s.op.push_back(us_since(t0, t3));
                if (!with_task) ++done;
            }
        }
        last = std::move(s);
        return done;
    });
    const promptly::runtime_stats rs = rt.stats();
    bench::print_result(std::to_string(answer), stats,
                        {{"create_p50_us", percentile(last.create, 0.5)},
                         {"create_p99_us", percentile(last.create, 0.99)},
                         {"remove_p50_us", percentile(last.remove, 0.5)},
                         {"remove_p99_us", percentile(last.remove, 0.99)},
                         {"op_p50_us", percentile(last.op, 0.5)},
                         {"op_p99_us", percentile(last.op, 0.99)},
                         {"decision_p50_us", rs.decision_latency_p50_us},
                         {"decision_p99_us", rs.decision_latency_p99_us}});
}
