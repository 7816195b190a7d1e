// The built-in programs (promptly/server/builtin_programs.hpp): each
// computes a result a client can check, stays within the bounds of its
// schema, and stops when cancelled.
#include "promptly/server/builtin_programs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "promptly/promptly.hpp"
#include "runtime_support.hpp"

namespace srv = promptly::server;
using srv::json;
using srv::job_state;

namespace {

struct server_fixture : ::testing::Test {
  promptly::runtime rt{config(2, "prompt")};
  srv::job_server s{rt};
  server_fixture() { srv::register_builtin_programs(s); }

  json run(const std::string& program, const json& args) {
    const srv::job_info i = s.submit(program, args).wait();
    EXPECT_EQ(i.state, job_state::done) << program << " " << args.dump() << ": " << i.error;
    return i.result;
  }
  srv::error_code refused(const std::string& program, const json& args) {
    try {
      (void)s.submit(program, args);
    } catch (const srv::error& e) {
      return e.code();
    }
    ADD_FAILURE() << program << " " << args.dump() << " was accepted";
    return srv::error_code::not_allowed;
  }
};

using BuiltinPrograms = server_fixture;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// bing's work unit, as documented in src/server/programs/bing.cpp.
std::uint64_t bing_unit(std::uint64_t i) {
  std::uint64_t x = i | 1;
  for (int r = 0; r < 256; ++r) x = (x ^ (x >> 13)) * 0xff51afd7ed558ccdULL + static_cast<std::uint64_t>(r);
  return x;
}

}  // namespace

TEST_F(BuiltinPrograms, AllSixAreRegisteredWithSchemas) {
  std::set<std::string> names;
  for (const auto& p : s.programs()) {
    names.insert(p.name);
    EXPECT_FALSE(p.help.empty()) << p.name;
    EXPECT_TRUE(p.schema.is_array()) << p.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"bing", "cilksort", "fib", "matmul", "nqueens", "stream"}));
  EXPECT_THROW(srv::register_builtin_programs(s), std::invalid_argument) << "registering twice";
}

TEST_F(BuiltinPrograms, FibComputesTheNumber) {
  EXPECT_EQ(run("fib", {{"n", 25}}).get<long>(), 75025);
  EXPECT_EQ(run("fib", {{"n", 25}, {"cutoff", 2}}).get<long>(), 75025);
  EXPECT_EQ(run("fib", {{"n", 0}}).get<long>(), 0);
  EXPECT_EQ(run("fib", {{"n", 1}, {"cutoff", 50}}).get<long>(), 1);
}

TEST_F(BuiltinPrograms, NqueensCountsTheSolutions) {
  const long known[] = {1, 0, 0, 2, 10, 4, 40, 92, 352, 724};
  for (int n = 1; n <= 10; ++n) EXPECT_EQ(run("nqueens", {{"n", n}})["solutions"].get<long>(), known[n - 1]) << n;
}

TEST_F(BuiltinPrograms, MatmulMatchesTheClosedFormChecksumAndASerialProduct) {
  for (int n : {1, 2, 32, 64, 128}) {
    const json r = run("matmul", {{"n", n}});
    EXPECT_TRUE(r["verified"].get<bool>()) << n << ": " << r.dump();
    EXPECT_EQ(r["checksum"], r["expected"]);
  }
  // A serial product of the same inputs for n = 64 (above the base case).
  const std::size_t n = 64;
  auto a = [](std::size_t i, std::size_t j) { return static_cast<double>(static_cast<int>((i * 31 + j * 17) % 7) - 3); };
  auto b = [](std::size_t i, std::size_t j) { return static_cast<double>(static_cast<int>((i * 13 + j * 29) % 5) - 2); };
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < n; ++k) sum += a(i, k) * b(k, j);
  EXPECT_EQ(run("matmul", {{"n", 64}})["checksum"].get<double>(), sum);
}

TEST_F(BuiltinPrograms, CilksortSortsAPermutationOfItsInput) {
  for (long n : {0L, 1L, 2L, 1000L, 100000L}) {
    const json r = run("cilksort", {{"n", n}, {"seed", 7}});
    EXPECT_TRUE(r["sorted"].get<bool>()) << n;
    EXPECT_EQ(r["checksum"], r["checksum_before"]) << n;
    std::uint64_t expect = 0;
    for (long i = 0; i < n; ++i) expect += splitmix64(7 * 0x100000001b3ULL + static_cast<std::uint64_t>(i));
    EXPECT_EQ(r["checksum"].get<std::uint64_t>(), expect) << "the input is the documented pseudo-random sequence";
  }
}

TEST_F(BuiltinPrograms, BingDrawsWorkFromItsDistributionAndDoesAllOfIt) {
  std::set<double> bing_work, finance_work;
  for (int seed = 0; seed < 40; ++seed) {
    const json r = run("bing", {{"seed", seed}, {"scale", 0.001}});
    const double w = r["work_ms"].get<double>();
    EXPECT_GE(w, 5);
    EXPECT_LE(w, 195);
    bing_work.insert(w);
    const json f = run("bing", {{"workload", "finance"}, {"seed", seed}, {"scale", 0.001}});
    EXPECT_GE(f["work_ms"].get<double>(), 4);
    EXPECT_LE(f["work_ms"].get<double>(), 80);
    finance_work.insert(f["work_ms"].get<double>());
  }
  EXPECT_GT(bing_work.size(), 3u) << "the work varies with the seed";
  EXPECT_GT(finance_work.size(), 3u);
  // Every unit was computed: the checksum of a fixed amount of work.
  const json r = run("bing", {{"work_ms", 2.5}, {"seed", 3}});
  const auto units = r["units"].get<std::uint64_t>();
  EXPECT_EQ(units, 2500u);
  std::uint64_t expect = 0;
  for (std::uint64_t i = 0; i < units; ++i) expect += bing_unit(3 * 0x100000001b3ULL + i);
  EXPECT_EQ(r["checksum"].get<std::uint64_t>(), expect);
  EXPECT_EQ(run("bing", {{"work_ms", 0.01}, {"seed", 3}})["units"].get<std::uint64_t>(), 10u);
}

TEST_F(BuiltinPrograms, StreamSumsItsTriadExactly) {
  const json r = run("stream", {{"mib", 3}, {"reps", 2}});
  EXPECT_TRUE(r["verified"].get<bool>()) << r.dump();
  EXPECT_EQ(r["elements"].get<std::size_t>(), 3u * (1u << 20) / 24);
  double expect = 0;
  for (std::size_t i = 0; i < r["elements"].get<std::size_t>(); ++i) expect += static_cast<double>(i % 7) + 3.0 * static_cast<double>(i % 5);
  EXPECT_EQ(r["sum"].get<double>(), expect);
  EXPECT_GE(r["gb_per_s"].get<double>(), 0);
}

TEST_F(BuiltinPrograms, SchemasBoundEverySize) {
  using srv::error_code;
  EXPECT_EQ(refused("fib", {{"n", 51}}), error_code::bad_args);
  EXPECT_EQ(refused("fib", {{"n", -3}}), error_code::bad_args);
  EXPECT_EQ(refused("fib", {{"n", "30"}}), error_code::bad_args);
  EXPECT_EQ(refused("fib", {{"n", 10}, {"cutoff", 1}}), error_code::bad_args);
  EXPECT_EQ(refused("nqueens", {{"n", 17}}), error_code::bad_args);
  EXPECT_EQ(refused("nqueens", {{"n", 0}}), error_code::bad_args);
  EXPECT_EQ(refused("matmul", {{"n", 2048}}), error_code::bad_args);
  EXPECT_EQ(refused("matmul", {{"n", 48}}), error_code::bad_args) << "not a power of two";
  EXPECT_EQ(refused("matmul", {{"n", -64}}), error_code::bad_args);
  EXPECT_EQ(refused("cilksort", {{"n", (1L << 23) + 1}}), error_code::bad_args);
  EXPECT_EQ(refused("cilksort", {{"n", -1}}), error_code::bad_args);
  EXPECT_EQ(refused("cilksort", {{"n", 1e12}}), error_code::bad_args) << "a float is no integer";
  EXPECT_EQ(refused("stream", {{"mib", 257}}), error_code::bad_args);
  EXPECT_EQ(refused("stream", {{"mib", 0}}), error_code::bad_args);
  EXPECT_EQ(refused("stream", {{"reps", 1000000}}), error_code::bad_args);
  EXPECT_EQ(refused("bing", {{"workload", "search"}}), error_code::bad_args);
  EXPECT_EQ(refused("bing", {{"work_ms", 1e9}}), error_code::bad_args);
  EXPECT_EQ(refused("bing", {{"scale", -1}}), error_code::bad_args);
  EXPECT_EQ(refused("bing", {{"seed", 1}, {"path", "/etc/passwd"}}), error_code::bad_args) << "unknown argument";
}

TEST_F(BuiltinPrograms, LongProgramsStopWhenCancelled) {
  // Each would run for minutes; cancelled while its program runs, each ends
  // cancelled at its next cutoff.
  const std::vector<std::pair<std::string, json>> long_jobs = {
      {"fib", {{"n", 50}}},
      {"nqueens", {{"n", 16}}},
      {"bing", {{"work_ms", 10000}, {"scale", 10}}},
      {"stream", {{"mib", 8}, {"reps", 100}}},
  };
  for (const auto& [program, args] : long_jobs) {
    auto h = s.submit(program, args);
    EXPECT_EQ(h.status().state, job_state::running) << program;
    // Cancel once the root task runs (a job cancelled before its root starts
    // never calls the program, which would test nothing here).
    while (h.status().timing.queued_us == 0) std::this_thread::yield();
    EXPECT_TRUE(h.cancel()) << program;
    EXPECT_EQ(h.wait().state, job_state::cancelled) << program;
  }
  EXPECT_EQ(rt.stats().pools.size(), 0u);
}
