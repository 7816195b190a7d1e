// latency-under-load with the operating system's own priorities (protocol: latency_driver.hpp),
// and with `--protocol preempt` the `preempt` bench (preempt_driver.hpp): no task runtime, plain
// std::threads.
// Background: --workers std::threads, each of which lowers itself to nice 19
// (setpriority(PRIO_PROCESS, its tid, 19)). fib(n) is split into its subtrees of size n < split
// (n = cutoff + 8: a few hundred subtrees, the same call tree and the same leaves below the
// cutoff as the task-parallel versions); per fib the threads take subtrees from a shared atomic
// index and meet at a std::barrier, whose completion checks the value and starts the next fib.
// Strand background (preempt): --workers std::threads at nice 19 take the round's 2 x workers
// strands from a shared atomic index and meet at a std::barrier, whose completion starts the next
// round. The kernel preempts them whenever a nice-0 thread is runnable: no strand boundary needed.
// Interaction: a pool of --workers std::threads at nice 0 (the process's default) sleeping on a
// condition variable. The driver thread (nice 0) pushes each job; the root spins, pushes 3
// subtasks to the pool, runs the 4th itself, then helps with queued work until its subtasks are
// done. The kernel's CFS scheduler decides who runs: nice 0 has weight 1024, nice 19 has 15.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <barrier>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "preempt_driver.hpp"

namespace {

long subtree(prio::background& bg, long n, std::uint64_t idx) {
    if (n < bg.cutoff) return prio::bg_leaf(bg, n, idx);
    return subtree(bg, n - 1, 2 * idx) + subtree(bg, n - 2, 2 * idx + 1);
}

void split(long n, std::uint64_t idx, long below, std::vector<std::pair<long, std::uint64_t>>& out) {
    if (n < below) {
        out.emplace_back(n, idx);
        return;
    }
    split(n - 1, 2 * idx, below, out);
    split(n - 2, 2 * idx + 1, below, out);
}

void set_nice(int nice) {
    if (setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), nice) != 0) {
        std::perror("setpriority");
        std::exit(1);
    }
}

struct nice_rt {
    int workers;
    // background
    std::vector<std::thread> bg_threads;
    // interaction pool
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::function<void()>> q;
    bool quit = false;
    std::vector<std::thread> pool;

    explicit nice_rt(int w) : workers(w) {
        for (int i = 0; i < workers; ++i) pool.emplace_back([this] { pool_main(); });
    }
    ~nice_rt() {
        {
            std::lock_guard lk(m);
            quit = true;
        }
        cv.notify_all();
        for (auto& t : pool) t.join();
    }

    void pool_main() {
        for (;;) {
            std::function<void()> f;
            {
                std::unique_lock lk(m);
                cv.wait(lk, [this] { return quit || !q.empty(); });
                if (q.empty()) return;
                f = std::move(q.front());
                q.pop_front();
            }
            f();
        }
    }
    bool try_run_one() {
        std::function<void()> f;
        {
            std::lock_guard lk(m);
            if (q.empty()) return false;
            f = std::move(q.front());
            q.pop_front();
        }
        f();
        return true;
    }
    void push(std::function<void()> f) {
        {
            std::lock_guard lk(m);
            q.push_back(std::move(f));
        }
        cv.notify_one();
    }

    void submit(prio::job& j) {
        push([this, &j] {
            std::uint64_t v = j.root_work();
            std::uint64_t sub[4];
            std::atomic<int> left{3};
            for (std::uint64_t k = 1; k < 4; ++k)
                push([&j, &sub, &left, k] {
                    sub[k] = j.sub_work(k + 1);
                    left.fetch_sub(1, std::memory_order_release);
                });
            sub[0] = j.sub_work(1);
            while (left.load(std::memory_order_acquire) > 0)
                if (!try_run_one()) std::this_thread::yield();
            j.complete(v + sub[0] + sub[1] + sub[2] + sub[3]);
        });
    }

    // background state
    std::vector<std::pair<long, std::uint64_t>> parts;
    std::atomic<std::size_t> next{0};
    std::atomic<long> sum{0};
    bool exit_bg = false;

    void start_background(prio::background& bg) {
        parts.clear();
        split(bg.n, 1, bg.cutoff + 8, parts);
        next = 0;
        sum = 0;
        exit_bg = false;
        auto done = [this, &bg]() noexcept {
            bg.finished(sum.exchange(0));
            next.store(0);
            exit_bg = bg.stop.load();
        };
        auto bar = std::make_shared<std::barrier<decltype(done)>>(workers, done);
        for (int i = 0; i < workers; ++i)
            bg_threads.emplace_back([this, &bg, bar] {
                set_nice(19);
                for (;;) {
                    long local = 0;
                    for (std::size_t k; (k = next.fetch_add(1)) < parts.size();)
                        local += subtree(bg, parts[k].first, parts[k].second);
                    sum.fetch_add(local);
                    bar->arrive_and_wait();
                    if (exit_bg) return;
                }
            });
    }
    void start_strands(prio::strand_background& bg) {
        next = 0;
        exit_bg = false;
        auto done = [this, &bg]() noexcept {
            bg.round_done();
            next.store(0);
            exit_bg = bg.stop.load();
        };
        auto bar = std::make_shared<std::barrier<decltype(done)>>(workers, done);
        for (int i = 0; i < workers; ++i)
            bg_threads.emplace_back([this, &bg, bar] {
                set_nice(19);
                for (;;) {
                    for (std::size_t k; (k = next.fetch_add(1)) < std::size_t(bg.tasks);) bg.strand(k);
                    bar->arrive_and_wait();
                    if (exit_bg) return;
                }
            });
    }
    void stop_background() {
        for (auto& t : bg_threads) t.join();
        bg_threads.clear();
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
    nice_rt rt{int(pp.job.workers)};
    if (protocol == "preempt") {
        prio::preempt_driver<nice_rt> d{pp, rt};
        return d.run();
    }
    prio::latency_driver<nice_rt> d{pp.job, rt};
    return d.run();
}
