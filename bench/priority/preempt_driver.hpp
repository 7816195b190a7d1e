// The measurement protocol of `preempt` (suite `priority`): how long urgent work waits behind
// less urgent code whose serial strands are long, with no strand boundary (spawn, sync, future,
// yield) inside them. Shared by the C++ programs (Promptly, oneTBB task arenas, OS nice), each
// selected with `--protocol preempt`; bench/go/priolatency/preempt.go implements the same
// protocol in Go.
//
// A program supplies the Runtime of latency_driver.hpp (start_background for the fib background,
// stop_background, submit for an urgent job) plus
//   void start_strands(prio::strand_background& bg)   start the less urgent background: repeated
//                                                      rounds of a parallel loop of bg.tasks
//                                                      (2 x workers) tasks, each one serial strand
//                                                      bg.strand(i), then wait for the round; run
//                                                      until bg.stop is set
// stop_background() then stops whichever background runs.
//
// The driver (the main thread, an outside thread of every runtime, never reniced):
//  1. calibrates the strand work on this thread: a strand is `chunks` chunks of spin(), one chunk
//     ~10 us, chunks = strand length / the chunk's median time. Each chunk bumps a sharded counter
//     (a relaxed atomic add: no strand boundary), the background's progress.
//  2. floor: --floor-jobs urgent jobs, one per --period-us, with no background.
//  3. for each background of --backgrounds in order (`fib`, the boundary-rich reference of
//     latency-under-load, then strand lengths in ms): starts it, lets it run --settle-ms (at least
//     two strand lengths, so every worker is inside a strand), counts progress for --without-ms
//     without urgent work, then submits --window-jobs urgent jobs on an absolute schedule
//     (latency = from just before submit() to the end of the job's root task), waits for them,
//     stops the background. bg_kept = progress rate with urgent jobs / rate without (1 = the
//     urgent work cost the background nothing beyond its own CPU time, ~0.5% here);
//     bg_cores = progress without urgent work in cores' worth of calibrated spin (strands only).
//  4. checks every urgent job's value against the serial computation and every background fib.
// The answer (`result`) is {"jobs", "checksum" (sum of job values mod 2^64), "backgrounds"}: the
// same for every runtime that did the same urgent work.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "latency_driver.hpp"

namespace prio {

// One chunk of strand work: spin() of this many steps, ~10 us on this machine.
constexpr long strand_chunk_iters = 4000;

struct preempt_params {
    latency_params job;                 // urgent job shape, period, fib background, workers
    std::vector<std::string> backgrounds{"fib", "1", "5", "20", "100"};
    long settle_ms = 100, without_ms = 300;

    void parse(bench::args& a) {
        job.window_jobs = 100;
        job.floor_jobs = 50;
        job.n = 32;
        job.parse(a);
        std::string list = a.get_string("backgrounds", "fib,1,5,20,100");
        settle_ms = a.get_long("settle-ms", settle_ms);
        without_ms = a.get_long("without-ms", without_ms);
        backgrounds.clear();
        for (std::size_t at = 0; at <= list.size();) {
            std::size_t comma = std::min(list.find(',', at), list.size());
            std::string b = list.substr(at, comma - at);
            if (b != "fib") {
                char* end = nullptr;
                long ms = std::strtol(b.c_str(), &end, 10);
                if (b.empty() || *end != '\0' || ms < 1 || ms > 10000)
                    bench::args::fail("--backgrounds: '" + b + "' is neither fib nor a strand length in ms (1..10000)");
            }
            backgrounds.push_back(b);
            at = comma + 1;
        }
        if (settle_ms < 0 || without_ms < 1) bench::args::fail("--settle-ms must be >= 0 and --without-ms >= 1");
    }
};

// The strand background: rounds of `tasks` strands of `chunks` chunks each.
struct strand_background {
    long tasks = 4;
    long chunks = 100;
    std::atomic<bool> stop{false};
    progress_counter progress;             // chunks done
    std::atomic<std::uint64_t> sink{0};    // keeps the spin results alive
    std::atomic<long> rounds{0};

    // One serial strand: no spawn, no sync, no yield inside.
    void strand(std::uint64_t i) {
        std::uint64_t x = i + 1;
        for (long c = 0; c < chunks; ++c) {
            x = spin(x, strand_chunk_iters);
            progress.add(i);
        }
        sink.fetch_add(x, std::memory_order_relaxed);
    }
    void round_done() { rounds.fetch_add(1, std::memory_order_relaxed); }
};

template <class Runtime>
class preempt_driver {
public:
    preempt_driver(const preempt_params& p, Runtime& rt) : p_(p), rt_(rt) {}

    int run() {
        chunk_us_ = chunk_us();
        std::fprintf(stderr, "one strand chunk (spin %ld): %.2f us\n", strand_chunk_iters, chunk_us_);
        std::vector<std::map<std::string, double>> reps;
        std::uint64_t checksum = 0;
        long jobs = 0;
        for (long i = 0; i < p_.job.warmup + p_.job.reps; ++i) {
            std::map<std::string, double> m;
            std::uint64_t sum = 0;
            jobs = one_rep(m, sum);
            if (i > 0 && sum != checksum) bench::args::fail("checksum changed between repetitions");
            checksum = sum;
            if (i >= p_.job.warmup) reps.push_back(std::move(m));
        }
        std::map<std::string, double> med;
        for (auto& [k, v0] : reps[0]) {
            (void)v0;
            std::vector<double> v;
            for (auto& r : reps) v.push_back(r.at(k));
            med[k] = bench::median(v);
        }
        double worst_min = 1e300;
        for (auto& r : reps) worst_min = std::min(worst_min, r.at("strands_worst_p99_us"));
        std::string names;
        for (auto& b : p_.backgrounds) names += (names.empty() ? "" : ",") + b;
        std::string result = "{\"jobs\": " + std::to_string(jobs) + ", \"checksum\": " + std::to_string(checksum) +
                             ", \"backgrounds\": \"" + names + "\"}";
        bench::region_stats s{med.at("strands_worst_p99_us") * 1e-6, worst_min * 1e-6, med.at("util")};
        med.erase("util");
        med["chunk_us"] = chunk_us_;
        med["job_work_us"] = job_work_us_;
        std::vector<std::pair<std::string, double>> out(med.begin(), med.end());
        bench::print_result(result, s, out);
        return 0;
    }

private:
    static std::string key(const std::string& bg) { return bg == "fib" ? "fib" : "s" + bg + "ms"; }

    double chunk_us() {
        std::vector<double> t;
        std::uint64_t x = 1;
        for (int i = 0; i < 300; ++i) {
            auto t0 = clock::now();
            x = spin(x, strand_chunk_iters);
            t.push_back(seconds_since(t0, clock::now()) * 1e6);
        }
        bench::opaque(x);
        std::vector<double> w;
        std::uint64_t sink = 0;
        for (int i = 0; i < 200; ++i) {
            auto t0 = clock::now();
            sink += job_value_serial(std::uint64_t(i), p_.job.root_iters, p_.job.sub_iters);
            w.push_back(seconds_since(t0, clock::now()) * 1e6);
        }
        bench::opaque(sink);
        job_work_us_ = bench::median(w);
        return bench::median(t);
    }

    // Runs jobs [first, first + count) on the schedule and waits for them; returns the wall time of
    // the schedule (the window during which urgent work arrives).
    double urgent_window(std::vector<job>& jobs, std::size_t first, long count) {
        auto t0 = clock::now();
        submit_window(rt_, jobs, first, count, p_.job.period_us, t0);
        double s = seconds_since(t0, clock::now());
        wait_done(jobs, first, first + std::size_t(count));
        return s;
    }

    long one_rep(std::map<std::string, double>& m, std::uint64_t& checksum) {
        const long per = p_.job.window_jobs;
        const long total = p_.job.floor_jobs + long(p_.backgrounds.size()) * per;
        std::vector<job> jobs(static_cast<std::size_t>(total));
        for (long i = 0; i < total; ++i) {
            jobs[std::size_t(i)].id = std::uint64_t(i);
            jobs[std::size_t(i)].root_iters = p_.job.root_iters;
            jobs[std::size_t(i)].sub_iters = p_.job.sub_iters;
        }
        auto latencies = [&jobs](std::size_t first, std::size_t last) {
            std::vector<double> v;
            for (std::size_t i = first; i < last; ++i)
                v.push_back(seconds_since(jobs[i].submitted, jobs[i].done_at) * 1e6);
            return v;
        };
        urgent_window(jobs, 0, p_.job.floor_jobs);
        auto floor = latencies(0, std::size_t(p_.job.floor_jobs));
        m["floor_p50_us"] = percentile(floor, 50);
        m["floor_p99_us"] = percentile(floor, 99);

        const double cpu0 = bench::cpu_seconds_self();
        const auto wall0 = clock::now();
        double worst = 0;
        std::size_t next = std::size_t(p_.job.floor_jobs);
        for (const std::string& b : p_.backgrounds) {
            const std::string k = key(b);
            double rate_without = 0, rate_with = 0, cores = 0;
            auto measure = [&](auto& bg, long strand_ms) {
                std::this_thread::sleep_for(std::chrono::milliseconds(std::max(p_.settle_ms, 2 * strand_ms)));
                auto t0 = clock::now();
                std::uint64_t c0 = bg_total(bg);
                std::this_thread::sleep_for(std::chrono::milliseconds(p_.without_ms));
                auto t1 = clock::now();
                std::uint64_t c1 = bg_total(bg);
                double with_s = urgent_window(jobs, next, per);
                (void)with_s;
                auto t2 = clock::now();
                std::uint64_t c2 = bg_total(bg);
                rate_without = double(c1 - c0) / seconds_since(t0, t1);
                rate_with = double(c2 - c1) / seconds_since(t1, t2);
            };
            if (b == "fib") {
                background bg;
                bg.n = p_.job.n;
                bg.cutoff = p_.job.cutoff;
                bg.expect = fib_value(p_.job.n);
                rt_.start_background(bg);
                measure(bg, 0);
                bg.stop.store(true);
                rt_.stop_background();
                if (bg.wrong.load() != 0) bench::args::fail("a background fib computed a wrong value");
            } else {
                const long ms = std::stol(b);
                strand_background bg;
                bg.tasks = 2 * p_.job.workers;
                bg.chunks = std::max(1L, long(double(ms) * 1000.0 / chunk_us_ + 0.5));
                rt_.start_strands(bg);
                measure(bg, ms);
                bg.stop.store(true);
                rt_.stop_background();
                if (bg.rounds.load() < 1) bench::args::fail("the " + b + " ms strand background finished no round");
                cores = rate_without * chunk_us_ * 1e-6;
                m["bg_cores_" + k] = cores;
            }
            auto lat = latencies(next, next + std::size_t(per));
            next += std::size_t(per);
            m["p50_us_" + k] = percentile(lat, 50);
            m["p99_us_" + k] = percentile(lat, 99);
            m["max_us_" + k] = percentile(lat, 100);
            m["bg_kept_" + k] = rate_without > 0 ? rate_with / rate_without : 0;
            if (b != "fib") worst = std::max(worst, m["p99_us_" + k]);
            std::fprintf(stderr, "%-6s urgent p50 %8.0f us  p99 %8.0f us  max %8.0f us; background kept %.3f, %.2f cores\n",
                         k.c_str(), m["p50_us_" + k], m["p99_us_" + k], m["max_us_" + k], m["bg_kept_" + k], cores);
        }
        m["util"] = (bench::cpu_seconds_self() - cpu0) / seconds_since(wall0, clock::now());
        // The region: the worst urgent p99 over the strand backgrounds (fib's if there are none).
        m["strands_worst_p99_us"] = worst > 0 ? worst : m["p99_us_fib"];

        checksum = 0;
        for (long i = 0; i < total; ++i) {
            const job& j = jobs[std::size_t(i)];
            if (j.value != job_value_serial(j.id, p_.job.root_iters, p_.job.sub_iters))
                bench::args::fail("urgent job " + std::to_string(i) + " computed a wrong value");
            checksum += j.value;
        }
        return total;
    }

    static std::uint64_t bg_total(const background& bg) { return bg.leaves.total(); }
    static std::uint64_t bg_total(const strand_background& bg) { return bg.progress.total(); }

    preempt_params p_;
    Runtime& rt_;
    double chunk_us_ = 0, job_work_us_ = 0;
};

}  // namespace prio
