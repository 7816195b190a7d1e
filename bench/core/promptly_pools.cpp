// Pools made and removed at run time, and workers moved between pools
// (docs/policies.md). --what:
//   create-remove-empty   n times: create a pool, remove it (nothing ran in it)
//   create-remove-task    n times: create a pool, run one task in it and wait, remove it
//   switch                n times, on one worker, under `prompt`: a task in a less urgent pool
//                         touches a future computed in a more urgent one, so the worker moves
//                         to the urgent pool and back (two moves, each decided by the policy)
//   realloc               n times, on two workers busy in a background pool: a policy gives
//                         core 1 to a job pool that just became non-empty (AMCilk's core
//                         reallocation) and back when it empties; op_us = from the decision
//                         (the policy's on_event) to the job's task running on the moved core
//   many-idle             --pools P live pools under --policy; n trivial tasks, one after
//                         the other (submit, get), all in the least urgent pool while the
//                         others stay live and idle: each task costs at least two decisions
//                         (the pool becomes non-empty, then empty), so us_per_task is the
//                         cost of a decision at P pools
//   many-spread           as many-idle, task i in pool i mod P (every pool gets work)
// Per operation: p50/p99 of create_us, remove_us, op_us (one whole iteration), and the
// runtime's own event-to-decision latency (decision_p50_us/p99_us, runtime_stats).
#include <promptly/ext/policy.hpp>
#include <promptly/promptly.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
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

// The reallocation probe: every core serves the background pool, except that
// core 1 goes to the job pool while it has work (AMCilk: give_core_to_container).
class realloc_probe final : public promptly::ext::policy {
  public:
    realloc_probe(promptly::pool background, promptly::pool job) : background_(background.id), job_(job.id) {}
    std::string_view name() const noexcept override { return "realloc-probe"; }
    void on_event(const promptly::ext::event& ev, promptly::ext::decision& d) override {
        if (ev.kind == promptly::ext::event_kind::became_nonempty && ev.pool == job_) {
            decided_ns.store(now_ns(), std::memory_order_release);  // release: read by the job's task
            d.give_core(1, job_);
        } else if (ev.kind == promptly::ext::event_kind::became_empty && ev.pool == job_) {
            d.give_core(1, background_);
            returned.fetch_add(1, std::memory_order_release);  // release: the driver's next round
        } else if (ev.kind == promptly::ext::event_kind::installed || ev.kind == promptly::ext::event_kind::pool_added) {
            for (unsigned c = 0; c < d.core_count(); ++c)
                if (d.find(background_) != nullptr) d.give_core(c, background_);
        }
    }
    static std::int64_t now_ns() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
    }
    std::atomic<std::int64_t> decided_ns{0};
    std::atomic<long> returned{0};

  private:
    promptly::ext::pool_id background_, job_;
};

// Keeps every worker of the background pool busy with short strands (a
// fork-join tree of ~1 us leaves, again and again) until told to stop.
long busy_tree(int depth, const std::atomic<bool>& stop) {
    if (depth == 0 || stop.load(std::memory_order_relaxed)) {  // relaxed: a stop hint
        volatile long x = 0;
        for (int i = 0; i < 200; ++i) x = x + i;
        return 1;
    }
    auto [a, b] = promptly::join([&] { return busy_tree(depth - 1, stop); }, [&] { return busy_tree(depth - 1, stop); });
    return a + b;
}

// n reallocations: returns the decision -> running latencies in us.
std::vector<double> measure_realloc(promptly::runtime& rt, long n) {
    const promptly::pool background = rt.create_pool({.rank = 1});
    const promptly::pool job = rt.create_pool({.rank = 0});
    auto owned = std::make_unique<realloc_probe>(background, job);
    realloc_probe& probe = *owned;
    rt.set_policy(std::move(owned));
    std::atomic<bool> stop{false};
    auto load = rt.submit(background, [&] {
        long trees = 0;
        while (!stop.load(std::memory_order_relaxed)) trees += busy_tree(10, stop);  // relaxed: a stop hint
        return trees;
    });
    std::vector<double> lat;
    lat.reserve(static_cast<std::size_t>(n));
    for (long i = 0; i < n; ++i) {
        const std::int64_t ran = rt.submit(job, [] { return realloc_probe::now_ns(); }).get();
        lat.push_back(static_cast<double>(ran - probe.decided_ns.load(std::memory_order_acquire)) / 1000.0);
        // The next round needs the policy to have seen the job pool empty
        // (else its work would raise no event): wait for the core's return.
        while (probe.returned.load(std::memory_order_acquire) <= i) std::this_thread::yield();
    }
    stop.store(true, std::memory_order_relaxed);  // relaxed: a stop hint
    (void)load.get();
    rt.set_policy("prompt");
    rt.remove_pool(job);
    rt.remove_pool(background);
    return lat;
}

}  // namespace

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const std::string what = a.get_string("what", "create-remove-empty");
    const long n = a.get_long("n", 100000);
    promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    const long pool_count = a.get_long("pools", 8);
    const std::string policy = a.get_string("policy", "prompt");
    a.finish();
    const bool many = what == "many-idle" || what == "many-spread";
    if (what != "create-remove-empty" && what != "create-remove-task" && what != "switch" && what != "realloc" && !many)
        bench::args::fail("--what must be create-remove-empty, create-remove-task, switch, realloc, many-idle or many-spread");
    if (what == "realloc" && cfg.workers < 2) bench::args::fail("--what realloc needs --workers >= 2");
    if (many && (pool_count < 1 || pool_count > 4096)) bench::args::fail("--pools must be in [1, 4096]");
    cfg.policy = "prompt";
    cfg.levels = 2;
    if (many) {
        // One level (pool 0, rank 0) and pool_count - 1 pools of rank 1,
        // as a job server's jobs of one class: most urgent first is level 0,
        // then the pools oldest first, so the busy pool of many-idle (the
        // newest) is the last in every policy's order.
        cfg.levels = 1;
        try {
            (void)promptly::ext::make_policy(policy);
        } catch (const std::invalid_argument& e) {
            bench::args::fail(std::string("--policy: ") + e.what());
        }
        cfg.policy = policy;
    }

    promptly::runtime rt{cfg};
    std::vector<promptly::pool> pools;
    if (many) {
        pools.push_back(promptly::pool{0});  // level 0
        for (long i = 1; i < pool_count; ++i) pools.push_back(rt.create_pool({.rank = 1}));
    }
    samples last;
    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        samples s;
        long done = 0;
        if (many) {
            s.op.reserve(static_cast<std::size_t>(n));
            for (long i = 0; i < n; ++i) {
                const promptly::pool p = what == "many-idle" ? pools.back() : pools[static_cast<std::size_t>(i % pool_count)];
                const auto t0 = clock_type::now();
                done += rt.submit(p, [] { return 1L; }).get();
                s.op.push_back(us_since(t0, clock_type::now()));
            }
        } else if (what == "realloc") {
            s.op = measure_realloc(rt, n);
            done = n;
        } else if (what == "switch") {
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
    const double us_per_task = many && n > 0 ? stats.region_s * 1e6 / static_cast<double>(n) : 0;
    bench::print_result(std::to_string(answer), stats,
                        {{"create_p50_us", percentile(last.create, 0.5)},
                         {"create_p99_us", percentile(last.create, 0.99)},
                         {"remove_p50_us", percentile(last.remove, 0.5)},
                         {"remove_p99_us", percentile(last.remove, 0.99)},
                         {"op_p50_us", percentile(last.op, 0.5)},
                         {"op_p99_us", percentile(last.op, 0.99)},
                         {"decision_p50_us", rs.decision_latency_p50_us},
                         {"decision_p99_us", rs.decision_latency_p99_us},
                         {"us_per_task", us_per_task},
                         {"decisions", static_cast<double>(rs.decisions)}});
}
