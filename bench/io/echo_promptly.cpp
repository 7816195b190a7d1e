// Echo server of suite `io` on Promptly (runtimes `promptly-oblivious`, `promptly-prompt`,
// `promptly-aps`): seed 004 Sec. 6.2.1's interactive kernels next to a saturating compute
// kernel, all in one runtime, as seed 004 runs them: interaction at the most urgent level,
// computation at a lower one.
//   net:  io::listener::serve spawns a task per connection at level 0; each reads lines
//         with io::line_reader and writes them back (parking, never blocking a worker).
//   term: one task at level 0 echoes stdin lines to stdout through io:: descriptors.
//   compute: fib(n) with promptly::join above the cutoff (as in suite `core`), one
//         runtime::run at level 1 per repetition.
// --policy oblivious|prompt|aps picks how the runtime shares workers between the levels
// (runtime_config::policy); `oblivious` ignores the levels. Protocol with the driver:
// echo_server.hpp.
#include <promptly/io.hpp>
#include <promptly/promptly.hpp>

#include <optional>
#include <stdexcept>

#include "echo_server.hpp"

namespace io = promptly::io;

static long cutoff = 12;

static long fib(long n) {
    if (n < cutoff) return echo::fib_serial(n);
    auto [x, y] = promptly::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
    return x + y;
}

// seed 004 Sec. 6.2.1: accept a line of text and echo it back, until the client leaves.
static void echo_lines(io::descriptor& in, io::descriptor& out, std::stop_token st) {
    io::line_reader lines(in);
    try {
        for (;;) io::write(out, lines.read_line({}, st).get() + "\n", {}, st).get();
    } catch (const io::end_of_file&) {
    } catch (const io::cancelled&) {
    }
}

int main(int argc, char** argv) {
    echo::options o = echo::parse(argc, argv);
    cutoff = o.cutoff;
    promptly::runtime_config cfg;
    cfg.workers = unsigned(o.workers);
    cfg.levels = 2;
    if (o.policy.empty()) bench::args::fail("--policy oblivious|prompt|aps is required");
    cfg.policy = o.policy;
    try {
        promptly::validate(cfg);
    } catch (const std::invalid_argument& e) {
        bench::args::fail(e.what());
    }
    promptly::runtime rt{cfg};
    const promptly::level interactive_level{0}, compute_level{1};

    std::stop_source stop;
    std::optional<io::listener> listener;
    promptly::future<void> interactive;
    if (o.mode == "net") {
        listener.emplace(io::listener::tcp("127.0.0.1", 0, 4096));
        interactive = listener->serve(
            rt, [](io::descriptor c, std::stop_token st) { echo_lines(c, c, st); },
            {.level = interactive_level.value, .stop = stop.get_token()});
        echo::say("ready port=" + std::to_string(listener->port()));
    } else {
        interactive = rt.submit(interactive_level, [st = stop.get_token()] {
            io::descriptor in(0), out(1);
            echo_lines(in, out, st);
        });
        echo::say("ready");
    }

    echo::run_phases(o, [&] {
        long m = o.n;
        bench::opaque(m);
        return rt.run(compute_level, [m] { return fib(m); });
    });

    if (o.mode == "net") {
        echo::wait_for_stdin_eof();
        stop.request_stop();  // ends the accept loop and every connection's wait
    }
    interactive.get();  // term: ends when the driver closes our stdin
}
