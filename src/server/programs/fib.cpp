// fib: the Fibonacci number by fork-join recursion (Cilk's fib), serial
// below `cutoff`. The cancellation check is at every parallel frame, so a
// cancelled job stops within one leaf's work (about fib(cutoff) calls) and
// then ends cancelled (the partial sum is discarded).
#include "promptly/fork_join.hpp"
#include "programs.hpp"

namespace promptly::server::programs {

namespace {

std::int64_t fib_serial(std::int64_t n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

// Once cancelled, every frame returns at its next check without forking,
// so the tree unwinds in O(depth) steps per worker; throwing at each leaf
// instead would still visit every leaf (join always runs both branches)
// and cost one exception each: fib(50) took 13 s to stop that way.
std::int64_t fib(std::int64_t n, std::int64_t cutoff, const job_context& ctx) {
  if (ctx.cancelled()) return 0;
  if (n < cutoff) return fib_serial(n);
  auto [a, b] = promptly::join([&] { return fib(n - 1, cutoff, ctx); }, [&] { return fib(n - 2, cutoff, ctx); });
  return a + b;
}

}  // namespace

void register_fib(job_server& srv) {
  srv.register_program(
      "fib",
      [](job_context& ctx) -> json {
        const std::int64_t v = fib(ctx.args()["n"].get<std::int64_t>(), ctx.args()["cutoff"].get<std::int64_t>(), ctx);
        ctx.throw_if_cancelled();  // v is partial if cancelled
        return v;
      },
      arg_schema{}
          .integer("n", {.min = 0, .max = 50, .help = "which Fibonacci number (fib(50) is about 4*10^10 calls)"})
          .integer("cutoff", {.min = 2, .max = 50, .default_value = 20, .help = "below this n the recursion is serial"}),
      "Fibonacci number by fork-join recursion; result: the number");
}

}  // namespace promptly::server::programs
