// A program plugin for server_plugin_test and server_daemon_test: programs
// that use the public API beyond what the host happens to call itself, so
// loading them checks that the host exports all of it: fork-join
// (parallel_reduce, its tasks must run on the host's workers, in the job's
// pool), futures (async / get) and I/O futures (io::sleep_for); and two
// programs for the cancellation and drain tests: one parked in a
// cancellable wait of its job_context, one that ignores cancellation.
#include <chrono>

#include <promptly/io/timers.hpp>
#include <promptly/parallel.hpp>
#include <promptly/promptly.hpp>
#include <promptly/server/plugin.hpp>
#include <promptly/this_task.hpp>

PROMPTLY_SERVER_PROGRAMS(srv) {
  srv.register_program(
      "plugin_square",
      [](promptly::server::job_context& ctx) -> promptly::server::json {
        const auto x = ctx.args()["x"].get<std::int64_t>();
        return x * x;
      },
      promptly::server::arg_schema{}.integer("x", {.min = -1000000, .max = 1000000}), "x squared");
  srv.register_program(
      "plugin_sum",
      [](promptly::server::job_context& ctx) -> promptly::server::json {
        const auto n = ctx.args()["n"].get<std::int64_t>();
        const std::uint32_t job_pool = ctx.pool().id;
        bool all_in_pool = true;
        const auto sum = promptly::parallel_reduce(
            std::int64_t{0}, n, 16, std::int64_t{0},
            [&](std::int64_t i) {
              if (promptly::current_pool().id != job_pool) all_in_pool = false;
              return i;
            },
            [](std::int64_t a, std::int64_t b) { return a + b; });
        return {{"sum", sum}, {"in_pool", all_in_pool}};
      },
      promptly::server::arg_schema{}.integer("n", {.min = 0, .max = 1000000}), "0 + 1 + ... + n-1 with parallel_reduce");
  srv.register_program(
      "plugin_io",
      [](promptly::server::job_context& ctx) -> promptly::server::json {
        const auto us = ctx.args()["us"].get<std::int64_t>();
        const auto t0 = std::chrono::steady_clock::now();
        // Two tasks that each sleep on an I/O timer (parking their fibers)
        // and return a value through a future.
        auto a = promptly::async([us] {
          promptly::io::sleep_for(std::chrono::microseconds(us)).get();
          return std::int64_t{20};
        });
        auto b = promptly::async([us] {
          promptly::io::sleep_for(std::chrono::microseconds(us)).get();
          return std::int64_t{22};
        });
        const std::int64_t sum = a.get() + b.get();
        const auto slept = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
        return {{"sum", sum}, {"slept_enough", slept.count() >= us}};
      },
      promptly::server::arg_schema{}.integer("us", {.min = 0, .max = 1000000}),
      "two tasks that sleep `us` microseconds on I/O timers and add their results");
  srv.register_program(
      "plugin_park",
      [](promptly::server::job_context& ctx) -> promptly::server::json {
        ctx.sleep_for(std::chrono::hours(1));  // parked until cancelled
        return "slept an hour";
      },
      {}, "parks in job_context::sleep_for for an hour; ends when cancelled");
  srv.register_program(
      "plugin_stubborn",
      [](promptly::server::job_context&) -> promptly::server::json {
        // Ignores cancellation: an I/O sleep without the job's stop token, for ever.
        for (;;) promptly::io::sleep_for(std::chrono::milliseconds(1)).get();
      },
      {}, "never ends, ignores cancellation");
}
