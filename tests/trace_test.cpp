// The scheduler event trace (src/sched/event_trace.hpp): a runtime with
// trace_file set writes Chrome trace-event JSON at shutdown in which tasks
// appear as stretches on their workers' tracks, per pool, a parked task's
// stretch ends at its park and a new one starts where it resumes, and the
// policy thread's decisions appear on their own track. A path that cannot be
// written is an error from the constructor.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"

namespace {

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("promptly_" + name + "_" + std::to_string(::getpid()) + ".json");
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// Work that makes every kind of event: tasks at two levels, a task that
// parks on a promise and resumes, stolen branches, and a policy decision
// when level 0 becomes non-empty.
void exercise(promptly::runtime& rt) {
  EXPECT_EQ(rt.submit(promptly::level{1}, [] { return fib(18); }).get(), fib_serial(18));
  promptly::promise<int> p;
  promptly::future<int> f = p.get_future();
  std::atomic<bool> waiting{false};
  auto parked = rt.submit(promptly::level{1}, [&] {
    waiting = true;
    return f.get();
  });
  ASSERT_TRUE(wait_until([&] { return waiting.load(); }));
  p.set_value(5);
  EXPECT_EQ(parked.get(), 5);
  EXPECT_EQ(rt.submit(promptly::level{0}, [] { return fib(12); }).get(), 144);
}

}  // namespace

TEST(Trace, TasksParksResumesAndDecisionsAreWrittenAsChromeTraceJson) {
  const auto path = temp_file("trace");
  {
    promptly::runtime_config cfg = config(2, "prompt", 2);
    cfg.trace_file = path.string();
    promptly::runtime rt(cfg);
    exercise(rt);
  }
  const nlohmann::json doc = read_json(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(doc.contains("traceEvents"));
  std::set<std::string> names, pools, threads;
  int stretches = 0;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M") {
      threads.insert(e["args"]["name"].get<std::string>());
      continue;
    }
    names.insert(e["name"].get<std::string>());
    if (ph == "X") {
      ++stretches;
      pools.insert(e["cat"].get<std::string>());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_TRUE(threads.count("worker 0") && threads.count("worker 1") && threads.count("policy"));
  EXPECT_GT(stretches, 0);
  EXPECT_TRUE(pools.count("pool 0")) << "the urgent task ran at level 0";
  EXPECT_TRUE(pools.count("pool 1"));
  for (const char* n : {"task", "task (resumed)", "park", "decision"}) EXPECT_TRUE(names.count(n)) << n;
}

TEST(Trace, TheEnvironmentVariableTurnsItOn) {
  const auto path = temp_file("trace_env");
  ASSERT_EQ(::setenv("PROMPTLY_TRACE", path.c_str(), 1), 0);
  {
    promptly::runtime rt(config(2, "prompt", 2));
    exercise(rt);
  }
  ::unsetenv("PROMPTLY_TRACE");
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(read_json(path)["traceEvents"].empty());
  std::filesystem::remove(path);
}

TEST(Trace, AnUnwritablePathIsAClearError) {
  promptly::runtime_config cfg = config(2, "prompt");
  cfg.trace_file = "/nonexistent-dir/trace.json";
  EXPECT_NE(what_of<std::invalid_argument>([&] { promptly::runtime rt(cfg); }).find("trace_file"), std::string::npos);
}
