// The embedded job server (promptly/server/job_server.hpp): admission,
// exactly one terminal state per job, cancellation and its races, drain,
// destruction, waiting from threads and from tasks, callbacks, expiry,
// classes, stats, and the memory of a queued job.
#include "promptly/server/job_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "promptly/promptly.hpp"
#include "runtime_support.hpp"

namespace srv = promptly::server;
using srv::json;
using srv::job_state;

namespace {

srv::arg_schema n_schema() { return srv::arg_schema{}.integer("n", {.min = 0, .max = 40}); }

json fib_job(srv::job_context& ctx) { return fib(ctx.args()["n"].get<int>()); }

}  // namespace

TEST(JobServer, SubmitWaitReturnsTheResult) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  s.register_program("fib", fib_job, n_schema());
  auto h = s.submit("fib", {{"n", 20}});
  const srv::job_info i = h.wait();
  EXPECT_EQ(i.state, job_state::done);
  EXPECT_EQ(i.result.get<long>(), 6765);
  EXPECT_EQ(i.program, "fib");
  EXPECT_GT(i.timing.flow_us, 0);
  EXPECT_GE(i.timing.flow_us, i.timing.run_us);
  EXPECT_EQ(s.status(h.id()).state, job_state::done);
  EXPECT_EQ(rt.stats().pools.size(), 0u) << "the job's pool was removed";
}
