// The measurement protocol of `latency-under-load`, shared by the C++ programs (Promptly, oneTBB
// task arenas, OS nice); bench/go/priolatency/main.go implements the same protocol in Go.
//
// A program supplies a Runtime with
//   void start_background(prio::background& bg)   start the low-priority background: repeated
//                                                  parallel fib(bg.n) with serial leaves below
//                                                  bg.cutoff, each leaf calling bg.leaf(idx),
//                                                  each finished fib calling bg.finished(value);
//                                                  run until bg.stop is set
//   void stop_background()                         return once the background has stopped
//   void submit(prio::job& j)                      run interactive job j at high priority:
//                                                  root = spin(j.seed(0), root_iters), then 4
//                                                  subtasks spin(j.seed(k), sub_iters), k = 1..4,
//                                                  then j.complete(root + sum of subtasks)
//
// The driver (the main thread, an outside thread of every runtime, never reniced):
//  1. job_work_us: one job's work run serially on this thread (median of 200).
//  2. floor: --floor-jobs jobs, one per period, with no background: the no-load latency.
//  3. starts the background, lets it run 300 ms, then alternates --windows pairs of windows of
//     --window-jobs periods each: first a window without interactions, then one with a job
//     submitted every --period-us (absolute schedule; latency = from just before submit() to the
//     end of the job's root task). After each window with interactions it waits until all its
//     jobs are done (time counted in neither window). Background progress = completed serial
//     leaves per second; background_slowdown = rate without / rate with.
//  4. checks every job's value against the serial computation and every background fib's value.
// The answer (`result`) is {"jobs", "checksum" (sum of job values mod 2^64), "fib"}: the same for
// every runtime that did the same work.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "prio_common.hpp"

namespace prio {

struct latency_params {
    long n = 36, cutoff = 16;                   // background fib
    long root_iters = 5000, sub_iters = 5000;   // interactive job work
    long period_us = 10000;                     // one job every period
    long window_jobs = 100;                     // periods per window (100 x 10 ms = 1 s)
    long windows = 6;                           // pairs (without, with)
    long floor_jobs = 100;
    long workers = 2;
    long warmup = 0, reps = 1;

    void parse(bench::args& a) {
        n = a.get_long("n", n);
        cutoff = std::max(2L, a.get_long("cutoff", cutoff));
        root_iters = a.get_long("root-iters", root_iters);
        sub_iters = a.get_long("sub-iters", sub_iters);
        period_us = a.get_long("period-us", period_us);
        window_jobs = a.get_long("window-jobs", window_jobs);
        windows = a.get_long("windows", windows);
        floor_jobs = a.get_long("floor-jobs", floor_jobs);
        workers = a.get_long("workers", workers);
        warmup = a.get_long("warmup", warmup);
        reps = a.get_long("reps", reps);
        if (reps < 1 || windows < 1 || window_jobs < 1 || workers < 1) bench::args::fail("bad --reps/--windows/--window-jobs/--workers");
    }
};

struct background {
    long n = 36, cutoff = 16;
    std::atomic<bool> stop{false};
    progress_counter leaves;
    std::atomic<long> fibs_done{0};
    std::atomic<long> wrong{0};
    long expect = 0;

    void leaf(std::uint64_t idx) { leaves.add(idx); }
    void finished(long value) {
        if (value != expect) wrong.fetch_add(1, std::memory_order_relaxed);
        fibs_done.fetch_add(1, std::memory_order_relaxed);
    }
};

// Serial recursion below the cutoff; idx numbers the call-tree node (root 1, children 2i, 2i+1)
// and picks the leaf's counter shard.
inline long bg_leaf(background& bg, long n, std::uint64_t idx) {
    long r = bench::fib_serial(n);
    bg.leaf(idx);
    return r;
}

struct job {
    std::uint64_t id = 0;
    long root_iters = 0, sub_iters = 0;
    clock::time_point submitted, done_at;
    std::uint64_t value = 0;
    std::atomic<bool> done{false};

    std::uint64_t seed(std::uint64_t k) const { return id * 5 + k; }
    std::uint64_t root_work() const { return spin(seed(0), root_iters); }
    std::uint64_t sub_work(std::uint64_t k) const { return spin(seed(k), sub_iters); }
    void complete(std::uint64_t v) {
        done_at = clock::now();
        value = v;
        done.store(true, std::memory_order_release);
    }
};

// Submits jobs[first, first + count) to rt, one per period_us from t0 (an absolute schedule);
// returns when the schedule is over (not necessarily when the jobs are done).
template <class Runtime>
void submit_window(Runtime& rt, std::vector<job>& jobs, std::size_t first, long count, long period_us,
                   clock::time_point t0) {
    const auto period = std::chrono::microseconds(period_us);
    for (long k = 0; k < count; ++k) {
        std::this_thread::sleep_until(t0 + k * period);
        job& j = jobs[first + std::size_t(k)];
        j.submitted = clock::now();
        rt.submit(j);
    }
    std::this_thread::sleep_until(t0 + count * period);
}

inline void wait_done(std::vector<job>& jobs, std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i)
        while (!jobs[i].done.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

struct rep_result {
    std::vector<double> lat_us, floor_us;
    double rate_without = 0, rate_with = 0;
    double util = 0;  // process CPU / wall over the windows (cores kept busy)
    std::uint64_t checksum = 0;
    long jobs = 0;
};

template <class Runtime>
class latency_driver {
public:
    latency_driver(const latency_params& p, Runtime& rt) : p_(p), rt_(rt) {}

    int run() {
        double work_us = job_work_us();
        std::vector<rep_result> reps;
        for (long i = 0; i < p_.warmup + p_.reps; ++i) {
            rep_result r = one_rep();
            std::fprintf(stderr, "%s %ld: %zu jobs, p50 %.0f us, p99 %.0f us, max %.0f us; floor p50 %.0f p99 %.0f us; "
                                 "background %.0f leaves/s without, %.0f with (slowdown %.3f)\n",
                         i < p_.warmup ? "warm-up" : "rep", i, r.lat_us.size(), percentile(r.lat_us, 50),
                         percentile(r.lat_us, 99), percentile(r.lat_us, 100), percentile(r.floor_us, 50),
                         percentile(r.floor_us, 99), r.rate_without, r.rate_with, r.rate_without / r.rate_with);
            if (i >= p_.warmup) reps.push_back(std::move(r));
        }
        for (auto& r : reps)
            if (r.checksum != reps[0].checksum) bench::args::fail("checksum changed between repetitions");
        auto med = [&](auto f) {
            std::vector<double> v;
            for (auto& r : reps) v.push_back(f(r));
            return bench::median(v);
        };
        double p50 = med([](auto& r) { return percentile(r.lat_us, 50); });
        double p99 = med([](auto& r) { return percentile(r.lat_us, 99); });
        double mx = med([](auto& r) { return percentile(r.lat_us, 100); });
        double slow = med([](auto& r) { return r.rate_without / r.rate_with; });
        double p99_min = 1e300;
        for (auto& r : reps) p99_min = std::min(p99_min, percentile(r.lat_us, 99));
        bench::region_stats s{p99 * 1e-6, p99_min * 1e-6, med([](auto& r) { return r.util; })};
        std::string result = "{\"jobs\": " + std::to_string(reps[0].jobs) + ", \"checksum\": " +
                             std::to_string(reps[0].checksum) + ", \"fib\": " + std::to_string(fib_value(p_.n)) + "}";
        bench::print_result(result, s,
                            {{"latency_us_p50", p50},
                             {"latency_us_p99", p99},
                             {"latency_us_max", mx},
                             {"background_slowdown", slow},
                             {"floor_us_p50", med([](auto& r) { return percentile(r.floor_us, 50); })},
                             {"floor_us_p99", med([](auto& r) { return percentile(r.floor_us, 99); })},
                             {"bg_leaves_per_s", med([](auto& r) { return r.rate_without; })},
                             {"job_work_us", work_us},
                             {"jobs", double(reps[0].jobs)}});
        return 0;
    }

private:
    double job_work_us() {
        std::vector<double> t;
        std::uint64_t sink = 0;
        for (int i = 0; i < 200; ++i) {
            auto t0 = clock::now();
            sink += job_value_serial(std::uint64_t(i), p_.root_iters, p_.sub_iters);
            t.push_back(seconds_since(t0, clock::now()) * 1e6);
        }
        bench::opaque(sink);
        return bench::median(t);
    }

    rep_result one_rep() {
        rep_result r;
        const long total = p_.floor_jobs + p_.windows * p_.window_jobs;
        std::vector<job> jobs(static_cast<std::size_t>(total));
        for (long i = 0; i < total; ++i) {
            jobs[std::size_t(i)].id = std::uint64_t(i);
            jobs[std::size_t(i)].root_iters = p_.root_iters;
            jobs[std::size_t(i)].sub_iters = p_.sub_iters;
        }
        // 2. the no-load floor
        submit_window(rt_, jobs, 0, p_.floor_jobs, p_.period_us, clock::now());
        wait_done(jobs, 0, std::size_t(p_.floor_jobs));
        for (long i = 0; i < p_.floor_jobs; ++i)
            r.floor_us.push_back(seconds_since(jobs[std::size_t(i)].submitted, jobs[std::size_t(i)].done_at) * 1e6);

        // 3. background + alternating windows
        background bg;
        bg.n = p_.n;
        bg.cutoff = p_.cutoff;
        bg.expect = fib_value(p_.n);
        rt_.start_background(bg);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto window = std::chrono::microseconds(p_.period_us * p_.window_jobs);
        double leaves_without = 0, s_without = 0, leaves_with = 0, s_with = 0;
        const double cpu0 = bench::cpu_seconds_self();
        const auto wall0 = clock::now();
        std::size_t next = std::size_t(p_.floor_jobs);
        for (long w = 0; w < p_.windows; ++w) {
            auto t0 = clock::now();
            std::uint64_t c0 = bg.leaves.total();
            std::this_thread::sleep_until(t0 + window);
            auto t1 = clock::now();
            std::uint64_t c1 = bg.leaves.total();
            leaves_without += double(c1 - c0);
            s_without += seconds_since(t0, t1);

            submit_window(rt_, jobs, next, p_.window_jobs, p_.period_us, t1);
            auto t2 = clock::now();
            std::uint64_t c2 = bg.leaves.total();
            leaves_with += double(c2 - c1);
            s_with += seconds_since(t1, t2);
            wait_done(jobs, next, next + std::size_t(p_.window_jobs));
            next += std::size_t(p_.window_jobs);
        }
        r.util = (bench::cpu_seconds_self() - cpu0) / seconds_since(wall0, clock::now());
        bg.stop.store(true);
        rt_.stop_background();
        if (bg.wrong.load() != 0) bench::args::fail("a background fib computed a wrong value");
        if (bg.fibs_done.load() < 1) bench::args::fail("the background finished no fib at all");
        std::fprintf(stderr, "background: %ld fib(%ld) finished\n", bg.fibs_done.load(), p_.n);
        r.rate_without = leaves_without / s_without;
        r.rate_with = leaves_with / s_with;

        // 4. check the interactive work
        for (long i = 0; i < total; ++i) {
            const job& j = jobs[std::size_t(i)];
            if (j.value != job_value_serial(j.id, p_.root_iters, p_.sub_iters))
                bench::args::fail("job " + std::to_string(i) + " computed a wrong value");
            r.checksum += j.value;
            if (i >= p_.floor_jobs) r.lat_us.push_back(seconds_since(j.submitted, j.done_at) * 1e6);
        }
        r.jobs = total;
        return r;
    }

    latency_params p_;
    Runtime& rt_;
};

}  // namespace prio
