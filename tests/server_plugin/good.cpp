// A program plugin for server_plugin_test: two programs, one of them a
// fork-join program (its tasks must run on the host's workers, in the job's pool).
#include <promptly/parallel.hpp>
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
}
