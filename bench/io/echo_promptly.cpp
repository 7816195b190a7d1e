// Echo server of suite `io` on Promptly (runtimes `promptly-oblivious`, `promptly-prompt`,
// `promptly-aps`, `promptly-fair`): the fairly prompt paper Sec. 6.2.1's interactive kernels
// next to a saturating compute kernel, all in one runtime, as the fairly prompt paper runs them:
// interaction at the most urgent level, computation at a lower one.
//   net:  io::listener::serve spawns a task per connection at level 0; each reads lines
//         with io::line_reader and writes them back (parking, never blocking a worker).
//   term: one task at level 0 echoes stdin lines to stdout through io:: descriptors.
//   compute: fib(n) with promptly::join above the cutoff (as in suite `core`), one
//         runtime::run at level 1 per repetition.
// --policy oblivious|prompt|aps|fair picks how the runtime shares workers between the levels
// (runtime_config::policy); `oblivious` ignores the levels. With `fair`, --criterion H-L sets
// the two levels' weights (runtime_config::fair.weights; suite `io` runs 100-0, the
// winner-take-all criterion of the fairly prompt paper's Table 3 and its Table 5 comparison);
// without it every level weighs the same. --handler fiber|coroutine: a task per connection
// (default) or a co::task per connection (docs/coroutines.md). --yield-bound N sets
// runtime_config::yield_bound (yields of an idle worker before it sleeps; default the
// runtime's), --idle-yield-bound N runtime_config::idle_yield_bound (the same while no worker
// is active; suite `io` runs its many-connection benches with 2). Protocol with the driver:
// echo_server.hpp.
#include <promptly/promptly.hpp>

#include <stdexcept>
#include <string>

#include "promptly_config.hpp"
#include "promptly_echo.hpp"

static long cutoff = 12;

static long fib(long n) {
    if (n < cutoff) return bench::fib_serial(n);
    auto [x, y] = promptly::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
    return x + y;
}

int main(int argc, char** argv) {
    std::string criterion, handler;
    promptly::runtime_config cfg;
    echo::options o = echo::parse(argc, argv, [&](bench::args& a) {
        criterion = a.get_string("criterion", "");
        handler = a.get_string("handler", "fiber");
        bench::read_yield_bounds(a, cfg);
    });
    if (handler != "fiber" && handler != "coroutine") bench::args::fail("--handler must be fiber or coroutine");
    cutoff = o.cutoff;
    cfg.workers = unsigned(o.workers);
    cfg.levels = 2;
    if (o.policy.empty()) bench::args::fail("--policy oblivious|prompt|aps|fair is required");
    cfg.policy = o.policy;
    if (!criterion.empty()) {
        if (o.policy != "fair") bench::args::fail("--criterion is a weight per level of the fair policy only");
        cfg.fair.weights = echo::parse_weights(criterion, "criterion");
        if (cfg.fair.weights.size() != cfg.levels)
            bench::args::fail("--criterion needs one weight per level (interaction-compute, e.g. 100-0), not '" +
                              criterion + "'");
    }
    try {
        promptly::validate(cfg);
    } catch (const std::invalid_argument& e) {
        bench::args::fail(e.what());
    }
    promptly::runtime rt{cfg};
    const promptly::level interactive_level{0}, compute_level{1};

    echo::promptly_interactive interactive(rt, o.mode, interactive_level.value, handler);

    echo::run_phases(o, [&] {
        long m = o.n;
        bench::opaque(m);
        return rt.run(compute_level, [m] { return fib(m); });
    });

    interactive.finish();
}
