// latency-under-load on oneTBB with two task arenas (protocol: latency_driver.hpp), and with
// `--protocol preempt` the `preempt` bench (preempt_driver.hpp).
// Worker count: global_control caps TBB's thread pool at --workers + 1 so that TBB starts
// exactly --workers worker threads; the main (driver) thread only submits and never joins an
// arena, so --workers threads compute, as in every runtime of this bench. Both arenas have
// --workers slots, none reserved for masters.
// Background: enqueued into a task_arena with priority::low; the enqueued task loops over
// fib(n), one tbb::task_group per call with n >= cutoff (run() the first branch, compute the
// second inline, wait()), serial leaves below the cutoff.
// Strand background (preempt): enqueued into the low arena, rounds of a tbb::task_group of
// 2 x workers run() tasks, each one serial strand, then wait().
// Interaction: each job is enqueued with high.enqueue() from the driver thread into a task_arena
// with priority::high; its root spins, runs its 4 subtasks in a tbb::task_group and waits.
// oneTBB moves workers to the higher-priority arena when they look for work; it does not preempt
// a worker that is inside the background's task tree.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>
#include <thread>

#include "preempt_driver.hpp"

namespace {

long bg_fib(prio::background& bg, long n, std::uint64_t idx) {
    if (n < bg.cutoff) return prio::bg_leaf(bg, n, idx);
    long x = 0, y = 0;
    tbb::task_group g;
    g.run([&] { x = bg_fib(bg, n - 1, 2 * idx); });
    y = bg_fib(bg, n - 2, 2 * idx + 1);
    g.wait();
    return x + y;
}

struct tbb_rt {
    tbb::global_control limit;
    tbb::task_arena low, high;
    std::atomic<bool> bg_finished{false};

    explicit tbb_rt(int workers)
        : limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers) + 1),
          low(workers, 0, tbb::task_arena::priority::low),
          high(workers, 0, tbb::task_arena::priority::high) {}

    void start_background(prio::background& bg) {
        bg_finished = false;
        low.enqueue([this, &bg] {
            while (!bg.stop.load(std::memory_order_relaxed)) bg.finished(bg_fib(bg, bg.n, 1));
            bg_finished.store(true, std::memory_order_release);
        });
    }
    void start_strands(prio::strand_background& bg) {
        bg_finished = false;
        low.enqueue([this, &bg] {
            while (!bg.stop.load(std::memory_order_relaxed)) {
                tbb::task_group round;
                for (long i = 0; i < bg.tasks; ++i) round.run([&bg, i] { bg.strand(std::uint64_t(i)); });
                round.wait();
                bg.round_done();
            }
            bg_finished.store(true, std::memory_order_release);
        });
    }
    void stop_background() {
        while (!bg_finished.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    void submit(prio::job& j) {
        high.enqueue([&j] {
            std::uint64_t v = j.root_work();
            std::uint64_t sub[4];
            tbb::task_group tg;
            for (std::uint64_t k = 0; k < 4; ++k) tg.run([&j, &sub, k] { sub[k] = j.sub_work(k + 1); });
            tg.wait();
            j.complete(v + sub[0] + sub[1] + sub[2] + sub[3]);
        });
    }
};

}  // namespace

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const std::string protocol = a.get_string("protocol", "latency");
    if (protocol != "latency" && protocol != "preempt") bench::args::fail("--protocol must be latency or preempt");
    prio::preempt_params pp;
    if (protocol == "preempt")
        pp.parse(a);
    else
        pp.job.parse(a);
    a.finish();
    tbb_rt rt{int(pp.job.workers)};
    if (protocol == "preempt") {
        prio::preempt_driver<tbb_rt> d{pp, rt};
        return d.run();
    }
    prio::latency_driver<tbb_rt> d{pp.job, rt};
    return d.run();
}
