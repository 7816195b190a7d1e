// Echo server of suite `io` on oneTBB (runtime `tbb`), the way oneTBB's documentation suggests
// mixing blocking I/O with parallel work: the compute kernel runs in a task_arena of low
// priority; interaction is handled by dedicated threads that block in the kernel (one per
// connection, or one for the terminal) and run each line's handling inside a task_arena of
// high priority. fib(n) is the `core` suite's algorithm (tbb::task_group above the cutoff).
// Protocol with the driver: echo_server.hpp.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <thread>

#include "blocking_echo.hpp"
#include "echo_server.hpp"

static long cutoff = 12;

static long fib(long n) {
    if (n < cutoff) return bench::fib_serial(n);
    long x = 0, y = 0;
    tbb::task_group g;
    g.run([&] { x = fib(n - 1); });
    y = fib(n - 2);
    g.wait();
    return x + y;
}

int main(int argc, char** argv) {
    echo::options o = echo::parse(argc, argv);
    if (!o.policy.empty()) bench::args::fail("--policy is a Promptly option");
    cutoff = o.cutoff;
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(o.workers));
    tbb::task_arena low(int(o.workers), 1, tbb::task_arena::priority::low);
    tbb::task_arena high(int(o.workers), 1, tbb::task_arena::priority::high);
    // Each line's handling is a task of the high-priority arena (trivial here: the echo).
    auto handle = [&high](std::string& line) {
        high.execute([&] {
            std::size_t len = line.size();
            bench::opaque(len);
        });
    };

    echo::blocking_interactive interactive(o.mode, handle);

    echo::run_phases(o, [&] {
        long m = o.n;
        bench::opaque(m);
        return low.execute([m] { return fib(m); });
    });

    interactive.finish();
    std::_Exit(0);  // connection threads may still block in read(); nothing to clean up
}
