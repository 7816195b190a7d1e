// The scheduler event trace (src/sched/event_trace.hpp): a runtime with
// trace_file set writes Chrome trace-event JSON at shutdown in which tasks
// appear as stretches on their workers' tracks, per pool, a parked task's
// stretch ends at its park and a new one starts where it resumes, and the
// policy thread's decisions appear on their own track. A path that cannot be
// written is an error from the constructor.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

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
  // Parked: no worker is working any more. A value set before the park
  // would let get() return without a park and a resumed stretch.
  ASSERT_TRUE(wait_until([&] {
    const auto ws = rt.stats().worker_states;
    return std::none_of(ws.begin(), ws.end(), [](const auto& w) { return w.state == "working"; });
  }));
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

// The events a profiler links requests with (docs/tracing.md): a submit
// from a thread that is no worker names the task whose first stretch
// carries that id; a task made ready by a running task is a spawn naming
// the spawning fiber and the child, and the child's stretch carries the
// child's id; the child's completion is a wake ready naming the parked
// parent's fiber, which then runs a resumed stretch with that fiber id.
TEST(Trace, SubmitsSpawnsAndWakeUpsNameTheTasksAndFibersTheyLink) {
  const auto path = temp_file("trace_links");
  // The child runs at another level, so it is its own task (never run
  // inline by the parent). The parent's touch parks unless the child
  // finished first (a preempted parent): the run is repeated until the
  // trace shows the park (almost always the first).
  auto run_once = [&] {
    {
      promptly::runtime_config cfg = config(2, "prompt", 2);
      cfg.trace_file = path.string();
      promptly::runtime rt(cfg);
      auto root = rt.submit(promptly::level{1}, [] {
        auto child = promptly::async(promptly::pool(promptly::level{0}), [] { return fib(15); });
        return child.get();
      });
      EXPECT_EQ(root.get(), fib_serial(15));
    }
    nlohmann::json d = read_json(path);
    std::filesystem::remove(path);
    return d;
  };
  auto root_parked = [](const nlohmann::json& d) {
    for (const auto& e : d["traceEvents"])
      if (e["name"] == "task" && e["args"]["pool"] == 1) return e["args"]["end"] == "park";
    return false;
  };
  nlohmann::json doc = run_once();
  for (int attempt = 1; attempt < 20 && !root_parked(doc); ++attempt) doc = run_once();
  unsigned workers = 0, standbys = 0, external = 0;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "M") {
      const std::string n = e["args"]["name"];
      if (n.rfind("worker ", 0) == 0) ++workers;
      if (n.rfind("standby ", 0) == 0) ++standbys;
      if (n == "external") external = e["tid"];
    }
  ASSERT_EQ(workers, 2u);
  EXPECT_EQ(standbys, promptly::preemption_params{}.standby_threads) << "the standby threads follow the workers";
  EXPECT_EQ(external, workers + standbys + 1) << "the external track follows the policy track";
  std::vector<nlohmann::json> submits, spawns, wakes, starts, resumed;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" || e["ph"] == "C") continue;
    const std::string n = e["name"];
    if (n == "submit") submits.push_back(e);
    if (n == "spawn") spawns.push_back(e);
    if (n == "wake ready") wakes.push_back(e);
    if (n == "task") starts.push_back(e);
    if (n == "task (resumed)") resumed.push_back(e);
  }
  ASSERT_EQ(submits.size(), 1u);
  EXPECT_EQ(submits[0]["tid"], external);
  EXPECT_EQ(submits[0]["args"]["pool"], 1);
  auto started = [&](const nlohmann::json& id, int pool) {
    for (const auto& s : starts)
      if (s["args"]["task"] == id && s["args"]["pool"] == pool) return s;
    return nlohmann::json();
  };
  const nlohmann::json root = started(submits[0]["args"]["task"], 1);
  ASSERT_FALSE(root.is_null()) << "the submitted task's stretch carries its id";
  ASSERT_EQ(root["args"]["end"], "park") << "the root never waited for its child in 20 runs";
  nlohmann::json child_spawn;
  for (const auto& sp : spawns)
    if (sp["args"]["pool"] == 0 && sp["args"]["fiber"] == root["args"]["fiber"]) child_spawn = sp;
  ASSERT_FALSE(child_spawn.is_null()) << "the root's fiber spawned the level-0 child";
  const nlohmann::json child = started(child_spawn["args"]["task"], 0);
  ASSERT_FALSE(child.is_null()) << "the child's stretch carries the id its spawn named";
  // Durations are durations, not times since time zero (they were all 0
  // when both went through the same conversion).
  EXPECT_GT(child["dur"].get<double>(), 0.0) << "fib(15) took some time";
  EXPECT_LE(child_spawn["ts"].get<double>(), child["ts"].get<double>() + 1e-3);
  bool woken = false;
  for (const auto& w : wakes) woken = woken || w["args"]["target"] == root["args"]["fiber"];
  EXPECT_TRUE(woken) << "the child's completion made the root's fiber ready";
  bool root_resumed = false;
  for (const auto& r : resumed)
    root_resumed = root_resumed || (r["args"]["fiber"] == root["args"]["fiber"] && r["args"]["end"] == "end");
  EXPECT_TRUE(root_resumed) << "the root resumed on its fiber and ended there";
}

// OS samples (promptly-prof record-os) carry the steady clock; the trace says where its time 0 is on it.
TEST(Trace, TimeZeroIsGivenOnTheSteadyClock) {
  const auto path = temp_file("trace_t0");
  const auto before = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  {
    promptly::runtime_config cfg = config(1, "prompt", 1);
    cfg.trace_file = path.string();
    promptly::runtime rt(cfg);
  }
  const auto after = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
  const nlohmann::json doc = read_json(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(doc.contains("otherData"));
  ASSERT_TRUE(doc["otherData"].contains("t0_steady_ns"));
  const auto t0 = doc["otherData"]["t0_steady_ns"].get<std::int64_t>();
  EXPECT_GE(t0, before);
  EXPECT_LE(t0, after);
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
