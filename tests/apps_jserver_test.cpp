// The job server of apps/jserver: its parallel kernels compute what their serial references
// compute, and a short run releases jobs of every type, finishes every one with the right
// answer, and refuses bad options by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "jserver.hpp"
#include "kernels.hpp"
#include "priorities.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

// 2 workers, one level per priority of the app's order.
promptly::runtime_config config(const char* policy) { return ::config(2, policy, jserver::order::size); }

TEST(JserverKernels, MatchTheirSerialReferences) {
  promptly::runtime rt{config("oblivious")};
  const auto a = jserver::random_matrix(64, 1), b = jserver::random_matrix(64, 2);
  EXPECT_EQ(rt.run([&] { return jserver::multiply(a, b, 8); }), jserver::multiply_serial(a, b));
  EXPECT_EQ(rt.run([] { return jserver::fib(22, 8); }), jserver::fib_serial(22));
  auto v = jserver::random_longs(50'001, 3);  // odd: uneven halves
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(rt.run([&] { return jserver::cilksort(v, 256); }), jserver::sorted_checksum(sorted));
  EXPECT_EQ(v, sorted);
  const auto x = jserver::random_dna(301, 4), y = jserver::random_dna(257, 5);  // blocks do not divide n
  const int want = jserver::smith_waterman_serial(x, y);
  EXPECT_GT(want, 0);
  EXPECT_EQ(rt.run([&] { return jserver::smith_waterman(x, y, 32); }), want);
  EXPECT_EQ(rt.run([&] { return jserver::smith_waterman(x, x, 32); }), 2 * 301);  // identical strings
}

class JserverPolicies : public ::testing::TestWithParam<const char*> {};

TEST_P(JserverPolicies, EveryReleasedJobFinishesWithTheRightAnswer) {
  watchdog guard(hang_guard, "JserverPolicies.EveryReleasedJobFinishesWithTheRightAnswer");
  promptly::runtime rt{config(GetParam())};
  jserver::jserver_options o;
  o.load = 0.5;
  o.duration = std::chrono::milliseconds(under_tsan ? 400 : 200);
  o.sizes = {.mm_n = 32, .mm_base = 8, .fib_n = 18, .fib_cutoff = 10, .sort_n = 4000, .sort_base = 256,
             .sw_n = 128, .sw_block = 16};
  const auto r = jserver::run_jserver(rt, o);
  EXPECT_EQ(r.wrong_answers, 0u);
  for (std::size_t t = 0; t < 4; ++t) {
    EXPECT_GT(r.types[t].work_us, 0) << jserver::type_names[t];
    EXPECT_GT(r.types[t].latency_us.size(), 0u) << jserver::type_names[t];
    for (double us : r.types[t].latency_us) EXPECT_GT(us, 0) << jserver::type_names[t];
  }
  EXPECT_NEAR(r.offered_load, 0.5, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Policies, JserverPolicies, ::testing::Values("aps", "prompt", "fair", "oblivious"));

TEST(Jserver, BadOptionsAreRefusedByName) {
  promptly::runtime rt{config("aps")};
  jserver::jserver_options o;
  o.load = 0;
  EXPECT_EQ(what_of<std::invalid_argument>([&] { (void)jserver::run_jserver(rt, o); }), "jserver: load must be positive");
  o.load = 0.5;
  o.duration = std::chrono::milliseconds(0);
  EXPECT_EQ(what_of<std::invalid_argument>([&] { (void)jserver::run_jserver(rt, o); }), "jserver: duration must be positive");
}

}  // namespace
