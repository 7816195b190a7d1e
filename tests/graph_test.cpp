// Task dependency graphs (promptly/graph.hpp): building, ordering on random
// DAGs, re-running, concurrent runs, exceptions, cancellation, cycle
// rejection, lifetimes. Every ordering test also writes plain (non-atomic)
// data in a task and reads it in its successors, so the ThreadSanitizer
// build checks that a successor happens-after its predecessors.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "promptly/graph.hpp"
#include "promptly/promptly.hpp"
#include "sched/worker.hpp"
#include "test_support.hpp"
#include "worker_probe.hpp"

namespace {

promptly::runtime_config workers(unsigned n) {
  promptly::runtime_config c;
  c.workers = n;
  return c;
}

// A random DAG as successor lists: out-degree <= 4, edges from a lower to a
// higher position. With `shuffle`, positions map to task ids in random
// order, so edges also go from higher to lower ids (the cycle check runs).
struct dag {
  std::vector<std::vector<std::uint32_t>> succ, pred;  // by task id
  std::vector<std::uint32_t> order;                      // order[pos] = id

  dag(std::size_t n, std::uint64_t seed, bool shuffle) : succ(n), pred(n), order(n) {
    std::mt19937_64 rng(seed);
    std::iota(order.begin(), order.end(), 0u);
    if (shuffle) std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t pos = 0; pos + 1 < n; ++pos) {
      const std::size_t degree = rng() % 5;  // 0..4
      for (std::size_t k = 0; k < degree; ++k) {
        // Mostly near successors (deep graphs), sometimes far ones (wide).
        const std::size_t span = (rng() % 4 == 0) ? n - pos - 1 : std::min<std::size_t>(16, n - pos - 1);
        const std::size_t to = pos + 1 + rng() % span;
        const std::uint32_t a = order[pos], b = order[to];
        if (std::find(succ[a].begin(), succ[a].end(), b) != succ[a].end()) continue;
        succ[a].push_back(b);
        pred[b].push_back(a);
      }
    }
  }
  std::size_t size() const { return succ.size(); }
};

// What every task of a checked graph records.
struct observations {
  explicit observations(std::size_t n) : runs(n), finished(n), depth(n) {}
  void reset() {
    for (auto& r : runs) r.store(0, std::memory_order_relaxed);
    for (auto& f : finished) f.store(false, std::memory_order_relaxed);
    std::fill(depth.begin(), depth.end(), 0);
    early_starts.store(0);
    started.store(0);
  }
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<bool>> finished;
  std::vector<int> depth;  // plain: written by the task, read by its successors
  std::atomic<int> early_starts{0};
  std::atomic<std::size_t> started{0};  // tasks that began, for tests that act mid-run
};

// Builds `d` into g; each task checks that its predecessors have finished,
// computes its depth from theirs, and counts its runs.
void build_checked(promptly::graph& g, const dag& d, observations& obs) {
  std::vector<promptly::graph_task> tasks(d.size());
  for (std::uint32_t id = 0; id < d.size(); ++id) {
    tasks[id] = g.emplace([&obs, &d, id] {
      obs.started.fetch_add(1, std::memory_order_relaxed);
      int deepest = 0;
      for (std::uint32_t p : d.pred[id]) {
        if (!obs.finished[p].load(std::memory_order_acquire)) obs.early_starts.fetch_add(1);
        deepest = std::max(deepest, obs.depth[p]);
      }
      obs.depth[id] = deepest + 1;
      obs.runs[id].fetch_add(1, std::memory_order_relaxed);
      obs.finished[id].store(true, std::memory_order_release);
    });
  }
  for (std::uint32_t a = 0; a < d.size(); ++a)
    for (std::uint32_t b : d.succ[a]) tasks[a].precede(tasks[b]);
}

std::vector<int> serial_depths(const dag& d) {
  std::vector<int> depth(d.size(), 0);
  for (std::uint32_t id : d.order) {
    int deepest = 0;
    for (std::uint32_t p : d.pred[id]) deepest = std::max(deepest, depth[p]);
    depth[id] = deepest + 1;
  }
  return depth;
}

void expect_complete_run(const dag& d, const observations& obs, const std::vector<int>& depths) {
  EXPECT_EQ(obs.early_starts.load(), 0) << "a task started before one of its predecessors finished";
  std::size_t wrong_runs = 0;
  for (std::size_t i = 0; i < d.size(); ++i) wrong_runs += obs.runs[i].load() != 1;
  EXPECT_EQ(wrong_runs, 0u) << "tasks that did not run exactly once";
  EXPECT_EQ(obs.depth, depths);
}

// A gate that tasks wait on without blocking their worker (the fiber parks).
struct gate {
  promptly::promise<void> p;
  promptly::future<void> f = p.get_future();
  void open() { p.set_value(); }
  void pass() const { f.get(); }
};

}  // namespace

// ---------------------------------------------------------------- building

TEST(GraphBuild, HandlesNamesAndCounts) {
  promptly::graph g("build");
  EXPECT_TRUE(g.empty());
  auto a = g.emplace([] {}).name("a");
  auto [b, c] = g.emplace([] {}, [] {});
  b.name("b");
  a.precede(b, c);
  c.succeed(b);
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(g.num_edges(), 3u);
  EXPECT_EQ(a.id(), 0u);
  EXPECT_EQ(c.id(), 2u);
  EXPECT_EQ(a.num_successors(), 2u);
  EXPECT_EQ(c.num_predecessors(), 2u);
  EXPECT_EQ(b.name(), "b");
  EXPECT_EQ(c.name(), "");
  EXPECT_EQ(g.task(1), b);
  EXPECT_EQ(g.name(), "build");
  EXPECT_THROW((void)g.task(3), std::out_of_range);
}

TEST(GraphBuild, MisuseIsRejectedWithClearErrors) {
  promptly::graph g("one"), h("two");
  auto a = g.emplace([] {}).name("a");
  auto x = h.emplace([] {});
  try {
    a.precede(a);
    FAIL() << "a self-loop was accepted";
  } catch (const promptly::graph_cycle& e) {
    EXPECT_NE(std::string(e.what()).find("\"a\" of graph \"one\" cannot precede itself"), std::string::npos) << e.what();
  }
  try {
    a.precede(x);
    FAIL() << "an edge between graphs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("different graphs"), std::string::npos) << e.what();
  }
  promptly::graph_task empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_THROW(a.precede(empty), std::invalid_argument);
  EXPECT_EQ(g.num_edges(), 0u);
}

TEST(GraphBuild, CallablesAreDestroyedWithTheGraph) {
  auto token = std::make_shared<int>(7);
  {
    promptly::graph g;
    for (int i = 0; i < 100; ++i) g.emplace([token] { (void)*token; });  // boxed: not trivially destructible
    EXPECT_EQ(token.use_count(), 101);
    g.clear();
    EXPECT_EQ(token.use_count(), 1);
    EXPECT_TRUE(g.empty());
    g.emplace([token] {});
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

// ----------------------------------------------------------------- running

TEST(GraphRun, EmptyGraphCompletesAtOnce) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  auto r = g.run(rt);
  EXPECT_TRUE(r.is_ready());
  EXPECT_NO_THROW(r.get());
  EXPECT_FALSE(g.running());
}

TEST(GraphRun, MutableCallablesKeepStateAcrossRuns) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  std::vector<int> seen;
  auto a = g.emplace([n = 0]() mutable { ++n; });
  auto b = g.emplace([&seen, n = 0, big = std::string(64, 'x')]() mutable { seen.push_back(++n); });
  a.precede(b);
  for (int i = 0; i < 3; ++i) g.run(rt).get();
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}

struct RandomDag : ::testing::TestWithParam<std::tuple<std::size_t, bool, unsigned>> {};

// The main correctness test: random DAGs up to 10^5 tasks, out-degree
// <= 4, fixed seeds; every task checks its predecessors finished before it
// started and runs exactly once; each graph is run three times.
TEST_P(RandomDag, PredecessorsFinishFirstAndEveryTaskRunsOnce) {
  const auto [size, shuffle, nworkers] = GetParam();
  const std::size_t n = size >= 10000 ? scaled(size) : size;
  promptly::runtime rt{workers(nworkers)};
  for (std::uint64_t seed : {1u, 2u}) {
    dag d(n, seed * 7919 + n, shuffle);
    observations obs(n);
    promptly::graph g;
    build_checked(g, d, obs);
    const std::vector<int> depths = serial_depths(d);
    for (int run = 0; run < 3; ++run) {
      obs.reset();
      promptly::graph_run r = g.run(rt);
      r.get();
      EXPECT_FALSE(r.cancelled());
      EXPECT_TRUE(r.not_run().empty());
      expect_complete_run(d, obs, depths);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, RandomDag,
                         ::testing::Values(std::tuple{std::size_t{1}, false, 2u}, std::tuple{std::size_t{10}, false, 2u},
                                           std::tuple{std::size_t{1000}, false, 2u},
                                           std::tuple{std::size_t{1000}, true, 4u},
                                           std::tuple{std::size_t{100000}, false, 2u},
                                           std::tuple{std::size_t{100000}, true, 2u},
                                           std::tuple{std::size_t{100000}, false, 4u}));

TEST(GraphRun, ModifiedBetweenRuns) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  std::vector<int> order;
  auto a = g.emplace([&] { order.push_back(1); });
  auto b = g.emplace([&] { order.push_back(2); });
  a.precede(b);
  g.run(rt).get();
  auto c = g.emplace([&] { order.push_back(0); });
  c.precede(a);  // an edge to a lower id: the cycle check runs, finds none
  auto d = g.emplace([&] { order.push_back(3); });
  d.succeed(b);
  g.run(rt).get();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 0, 1, 2, 3}));
}

TEST(GraphRun, RunningGraphIsBusy) {
  promptly::runtime rt{workers(2)};
  promptly::graph g("busy");
  gate open;
  auto a = g.emplace([&] { open.pass(); });
  auto b = g.emplace([] {});
  a.precede(b);
  promptly::graph_run r = g.run(rt);
  EXPECT_TRUE(g.running());
  try {
    (void)g.run(rt);
    FAIL() << "a second run of a running graph was accepted";
  } catch (const promptly::graph_busy& e) {
    EXPECT_NE(std::string(e.what()).find("graph \"busy\" is already running"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g.emplace([] {}), promptly::graph_busy);
  EXPECT_THROW(b.precede(a), promptly::graph_busy);
  EXPECT_THROW(g.clear(), promptly::graph_busy);
  open.open();
  r.get();
  EXPECT_FALSE(g.running());
  EXPECT_NO_THROW(g.run(rt).get());  // runnable again once finished
}

TEST(GraphRun, ConcurrentRunsOfDifferentGraphs) {
  promptly::runtime rt{workers(2)};
  constexpr int graphs = 6;
  const std::size_t n = scaled(3000, 10);
  std::vector<std::unique_ptr<dag>> dags;
  std::vector<std::unique_ptr<observations>> obs;
  std::vector<std::unique_ptr<promptly::graph>> gs;
  for (int i = 0; i < graphs; ++i) {
    dags.push_back(std::make_unique<dag>(n, 100 + i, i % 2 == 1));
    obs.push_back(std::make_unique<observations>(n));
    gs.push_back(std::make_unique<promptly::graph>());
    build_checked(*gs.back(), *dags.back(), *obs.back());
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < graphs; ++i) {
    threads.emplace_back([&, i] {
      const std::vector<int> depths = serial_depths(*dags[i]);
      for (int run = 0; run < 4; ++run) {
        obs[i]->reset();
        gs[i]->run(rt).get();
        expect_complete_run(*dags[i], *obs[i], depths);
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST(GraphRun, RunAndWaitFromInsideATask) {
  promptly::runtime rt{workers(2)};
  const std::size_t n = 2000;
  dag d(n, 5, false);
  observations obs(n);
  promptly::graph g;
  build_checked(g, d, obs);
  rt.run([&] {
    for (int run = 0; run < 3; ++run) {
      obs.reset();
      g.run(rt).get();  // parks this task's fiber; its worker runs the graph
    }
  });
  expect_complete_run(d, obs, serial_depths(d));
}

TEST(GraphRun, TasksMayWaitOnFutures) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  std::atomic<long> sum{0};
  std::vector<promptly::graph_task> layer;
  auto root = g.emplace([] {});
  for (int i = 0; i < 50; ++i) {
    auto t = g.emplace([&sum, i] {
      // A nested task whose future is touched: the node may park and resume
      // on another worker before it releases its successors.
      sum += promptly::async([i] {
               std::this_thread::sleep_for(std::chrono::microseconds(50));
               return long{i};
             }).get();
    });
    root.precede(t);
    layer.push_back(t);
  }
  long at_end = -1;
  auto last = g.emplace([&] { at_end = sum.load(); });
  for (auto& t : layer) last.succeed(t);
  g.run(rt).get();
  EXPECT_EQ(at_end, 49 * 50 / 2);
}

// The runtime's shutdown begins while the graph runs: the first task does
// not go on until a submission is rejected (shutdown has stopped accepting
// and is waiting). It then parks on a gate, and an outside thread opens the
// gate only once every worker is asleep in its slot: the run then has no
// ready task, only a parked one. A shutdown that stopped the workers as
// soon as they ran out of ready work would strand it (the 20 successors
// would never run); a correct one waits for the run.
TEST(GraphRun, RuntimeShutdownWaitsForRunningGraph) {
  promptly::graph g;  // outlives the runtime
  std::atomic<int> done{0};
  std::atomic<promptly::runtime*> runtime_of_run{nullptr};
  std::atomic<bool> saw_shutdown{false};
  std::atomic<bool> workers_slept{false};
  gate reopen;
  auto first = g.emplace([&] {
    // Probes accepted before shutdown began are no-op tasks, which the
    // shutdown also waits for.
    wait_until([&] {
      try {
        (void)runtime_of_run.load()->submit([] {});
        return false;
      } catch (const promptly::runtime_stopped&) {
        saw_shutdown = true;
        return true;
      }
    });
    reopen.pass();
  });
  for (int i = 0; i < 20; ++i) first.precede(g.emplace([&] { done.fetch_add(1); }));
  std::thread opener;
  {
    promptly::runtime rt{workers(2)};
    const auto ws = capture_workers(rt);
    ASSERT_EQ(ws.size(), 2u) << "could not run one task on every worker";
    opener = std::thread([&, ws] {
      wait_until([&] { return saw_shutdown.load(); });
      workers_slept = wait_until([&] {
        for (auto* w : ws)
          if (w->slot.state.load() != promptly::detail::sleep_slot::sleeping) return false;
        return true;
      });
      reopen.open();
    });
    runtime_of_run = &rt;
    (void)g.run(rt);  // handle dropped at once
  }
  opener.join();
  EXPECT_TRUE(saw_shutdown.load()) << "the run ended before shutdown began";
  EXPECT_TRUE(workers_slept.load()) << "the workers never slept while the run was parked";
  EXPECT_EQ(done.load(), 20);
  EXPECT_FALSE(g.running());
}

// The graph's destructor begins while its run is in progress: the first
// task does not return until the destructor of the object holding the
// graph has started (its body runs just before the graph member's
// destructor), and its 20 successors only become ready after that.
TEST(GraphRun, DestructorWaitsForTheRun) {
  promptly::runtime rt{workers(2)};
  std::atomic<int> done{0};
  std::atomic<bool> destroying{false};
  std::atomic<bool> held_until_destruction{false};
  struct announced_graph {
    std::atomic<bool>& destroying;
    promptly::graph g;
    ~announced_graph() { destroying = true; }  // then ~graph runs
  };
  promptly::graph_run r;
  {
    announced_graph holder{destroying, promptly::graph{}};
    auto first = holder.g.emplace([&] { held_until_destruction = wait_until([&] { return destroying.load(); }); });
    for (int i = 0; i < 20; ++i) first.precede(holder.g.emplace([&] { done.fetch_add(1); }));
    r = holder.g.run(rt);
  }
  EXPECT_TRUE(held_until_destruction.load()) << "the run ended before the graph's destructor began";
  EXPECT_EQ(done.load(), 20);
  EXPECT_TRUE(r.is_ready());
  EXPECT_NO_THROW(r.get());  // the handle outlives the graph
}

TEST(GraphRun, RunOnAStoppedRuntimeIsRejected) {
  promptly::runtime rt{workers(1)};
  promptly::graph g;
  g.emplace([] {});
  rt.shutdown();
  EXPECT_THROW((void)g.run(rt), promptly::runtime_stopped);
  EXPECT_FALSE(g.running());
}

// -------------------------------------------------------------- exceptions

// A layered graph: layer k+1 depends on all of layer k. The task `thrower`
// throws; its (transitive) successors must not run; the run reports it.
TEST(GraphExceptions, ThrowStopsSuccessorsAndFutureRethrows) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  constexpr int layers = 6, width = 4;
  std::vector<std::atomic<int>> ran(layers * width);
  std::atomic<bool> should_throw{true};
  std::vector<promptly::graph_task> t(layers * width);
  for (int i = 0; i < layers * width; ++i) {
    t[i] = g.emplace([&, i] {
      ran[i].fetch_add(1);
      if (i == 2 * width + 1 && should_throw.load()) throw std::runtime_error("task 9 failed");
    });
    if (i >= width)
      for (int p = (i / width - 1) * width; p < (i / width) * width; ++p) t[p].precede(t[i]);
  }
  promptly::graph_run r = g.run(rt);
  try {
    r.get();
    FAIL() << "the exception was not rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 9 failed");
  }
  EXPECT_TRUE(r.failed());
  EXPECT_FALSE(r.cancelled());
  EXPECT_EQ(r.failed_task_id(), std::optional<std::uint32_t>(2 * width + 1));
  EXPECT_EQ(r.failed_task(), t[2 * width + 1]);
  EXPECT_EQ(r.failed_task_name(), "");  // unnamed: the id says which
  for (int i = 0; i < 3 * width; ++i) EXPECT_EQ(ran[i].load(), 1) << "task " << i << " precedes the thrower's successors";
  for (int i = 3 * width; i < layers * width; ++i) EXPECT_EQ(ran[i].load(), 0) << "successor " << i << " of the thrower ran";
  std::vector<std::uint32_t> expected_not_run;
  for (int i = 0; i < layers * width; ++i)
    if (ran[i].load() == 0) expected_not_run.push_back(static_cast<std::uint32_t>(i));
  EXPECT_EQ(r.not_run_ids(), expected_not_run);
  ASSERT_EQ(r.not_run().size(), expected_not_run.size());
  EXPECT_EQ(r.not_run().front(), t[expected_not_run.front()]);

  // The same graph runs completely afterwards: counters were restored.
  should_throw = false;
  for (auto& x : ran) x = 0;
  g.run(rt).get();
  for (int i = 0; i < layers * width; ++i) EXPECT_EQ(ran[i].load(), 1);
}

TEST(GraphExceptions, FirstOfSeveralExceptionsIsReported) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  // Both sources start before either throws (one blocks its worker until
  // the other has started), so both throw; only one is reported.
  std::latch both_started(2);
  auto a = g.emplace([&] {
    both_started.arrive_and_wait();
    throw std::invalid_argument("a");
  });
  auto b = g.emplace([&] {
    both_started.arrive_and_wait();
    throw std::invalid_argument("b");
  });
  auto sink = g.emplace([] {});
  sink.succeed(a, b);
  promptly::graph_run r = g.run(rt);
  try {
    r.get();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(std::string(e.what()) == "a" || std::string(e.what()) == "b");
    // The handle names the task whose exception get() rethrew, not the other.
    EXPECT_EQ(r.failed_task(), std::string(e.what()) == "a" ? a : b);
  }
  EXPECT_EQ(r.not_run_ids(), (std::vector<std::uint32_t>{2}));
}

// A failed run says which task threw: by name, id and handle, with the
// task's own exception unchanged; the name outlives the graph.
TEST(GraphExceptions, TheRunNamesTheTaskThatThrew) {
  promptly::runtime rt{workers(2)};
  promptly::graph_run failed;
  {
    promptly::graph g("pipeline");
    auto load = g.emplace([] {}).name("load");
    auto parse = g.emplace([] { throw std::domain_error("bad header"); }).name("parse");
    auto save = g.emplace([] {}).name("save");
    load.precede(parse);
    parse.precede(save);
    failed = g.run(rt);
    try {
      failed.get();
      FAIL() << "no exception";
    } catch (const std::domain_error& e) {  // the task's exception, not a wrapper
      EXPECT_STREQ(e.what(), "bad header");
    }
    EXPECT_EQ(failed.failed_task_name(), "parse");
    EXPECT_EQ(failed.failed_task_id(), std::optional<std::uint32_t>(parse.id()));
    EXPECT_EQ(failed.failed_task(), parse);
    EXPECT_EQ(failed.failed_task().name(), "parse");
    parse.name("renamed");  // the handle keeps the name the task had when the run ended

    // A run without an exception names no task, and neither does a cancelled one.
    promptly::graph ok("ok");
    ok.emplace([] {}).name("fine");
    promptly::graph_run good = ok.run(rt);
    good.get();
    EXPECT_EQ(good.failed_task_id(), std::nullopt);
    EXPECT_TRUE(good.failed_task().empty());
    EXPECT_EQ(good.failed_task_name(), "");
  }
  // The graph is gone; the record still holds the name (ASan checks that it
  // is not read from the graph).
  EXPECT_EQ(failed.failed_task_name(), "parse");
  EXPECT_EQ(failed.failed_task_id(), std::optional<std::uint32_t>(1));
}

TEST(GraphExceptions, ACancelledRunNamesNoTask) {
  promptly::runtime rt{workers(2)};
  promptly::graph g("cancelled");
  promptly::graph_run handle;
  std::binary_semaphore handle_set{0};
  auto first = g.emplace([&] {
    handle_set.acquire();  // the handle exists before the task cancels through it
    handle.cancel();
  });
  auto second = g.emplace([] {});
  first.precede(second);
  handle = g.run(rt);
  handle_set.release();
  EXPECT_THROW(handle.get(), promptly::graph_cancelled);
  EXPECT_EQ(handle.failed_task_id(), std::nullopt);
  EXPECT_TRUE(handle.failed_task().empty());
}

// ------------------------------------------------------------ cancellation

// A chain; task `k` cancels the run through its handle. Every later task is
// a successor of k, so none of them may run.
TEST(GraphCancel, CancelFromATaskStopsItsSuccessors) {
  promptly::runtime rt{workers(2)};
  promptly::graph g("chain");
  constexpr int n = 100, k = 40;
  std::vector<int> ran(n, 0);  // plain: a chain runs one task at a time
  promptly::graph_run handle;
  gate handle_ready;
  promptly::graph_task prev;
  for (int i = 0; i < n; ++i) {
    auto t = g.emplace([&, i] {
      ran[i] = 1;
      if (i == k) {
        handle_ready.pass();
        handle.cancel();
      }
    });
    if (i > 0) prev.precede(t);
    prev = t;
  }
  handle = g.run(rt);
  handle_ready.open();
  try {
    handle.get();
    FAIL() << "a cancelled run completed normally";
  } catch (const promptly::graph_cancelled& e) {
    EXPECT_NE(std::string(e.what()).find("59 of 100 tasks did not run"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(handle.cancelled());
  for (int i = 0; i < n; ++i) EXPECT_EQ(ran[i], i <= k ? 1 : 0) << "task " << i;
  std::vector<std::uint32_t> expected(n - k - 1);
  std::iota(expected.begin(), expected.end(), std::uint32_t{k + 1});
  EXPECT_EQ(handle.not_run_ids(), expected);

  // Cancelling again after the end changes nothing; a new run is complete.
  handle.cancel();
  std::fill(ran.begin(), ran.end(), 0);
  promptly::graph_run again = g.run(rt);
  again.get();
  EXPECT_FALSE(again.cancelled());
  EXPECT_EQ(std::accumulate(ran.begin(), ran.end(), 0), n);
}

TEST(GraphCancel, CancelFromOutsideWhileATaskRuns) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  gate resume;
  std::atomic<bool> waiting{false};
  std::atomic<int> after{0};
  auto slow = g.emplace([&] {
    waiting = true;
    resume.pass();  // running when cancel() is called: it finishes
  });
  for (int i = 0; i < 10; ++i) slow.precede(g.emplace([&] { after.fetch_add(1); }));
  promptly::graph_run r = g.run(rt);
  while (!waiting.load()) std::this_thread::yield();
  r.cancel();
  resume.open();
  EXPECT_THROW(r.get(), promptly::graph_cancelled);
  EXPECT_EQ(after.load(), 0);
  EXPECT_EQ(r.not_run_ids().size(), 10u);
}

TEST(GraphCancel, CancelAfterCompletionIsNoop) {
  promptly::runtime rt{workers(2)};
  promptly::graph g;
  g.emplace([] {});
  promptly::graph_run r = g.run(rt);
  r.wait();
  r.cancel();
  EXPECT_NO_THROW(r.get());
  EXPECT_FALSE(r.cancelled());
  EXPECT_TRUE(r.not_run().empty());
}

// Stress (also under TSan): random DAGs cancelled at random moments. Every
// task either ran once or is listed as not run, and a task that ran had
// all of its predecessors run.
TEST(GraphCancel, RandomCancellationKeepsTheInvariants) {
  promptly::runtime rt{workers(4)};  // oversubscribed on 2 cores
  const std::size_t n = scaled(20000, 10);
  std::mt19937 rng(42);
  for (int round = 0; round < 12; ++round) {
    dag d(n, 900 + round, round % 2 == 1);
    observations obs(n);
    promptly::graph g;
    build_checked(g, d, obs);
    // Cancel after a random number of tasks began (sometimes after all of
    // them: a cancel that changes nothing), measured in progress, not time.
    const std::size_t cancel_after = rng() % (n + n / 4);
    promptly::graph_run r = g.run(rt);
    ASSERT_TRUE(wait_until([&] { return obs.started.load() >= cancel_after || r.is_ready(); })) << "round " << round;
    r.cancel();
    r.wait();
    std::vector<char> skipped(n, 0);
    for (std::uint32_t id : r.not_run_ids()) skipped[id] = 1;
    EXPECT_EQ(obs.early_starts.load(), 0);
    for (std::uint32_t id = 0; id < n; ++id) {
      ASSERT_EQ(obs.runs[id].load(), skipped[id] ? 0 : 1) << "task " << id;
      if (!skipped[id]) {
        for (std::uint32_t p : d.pred[id]) {
          ASSERT_FALSE(skipped[p]) << "task " << id << " ran after a skipped predecessor";
        }
      }
    }
    if (r.not_run_ids().empty()) {
      EXPECT_NO_THROW(r.get());
    } else {
      EXPECT_THROW(r.get(), promptly::graph_cancelled);
    }
  }
}

// ------------------------------------------------------------------ cycles

TEST(GraphCycle, CycleIsRejectedNamingItsTasks) {
  promptly::runtime rt{workers(2)};
  promptly::graph g("loopy");
  auto src = g.emplace([] {}).name("source");
  auto a = g.emplace([] {}).name("a");
  auto b = g.emplace([] {}).name("b");
  auto c = g.emplace([] {}).name("c");
  auto out = g.emplace([] {}).name("out");
  src.precede(a);
  a.precede(b);
  b.precede(c);
  c.precede(a, out);
  try {
    (void)g.run(rt);
    FAIL() << "a cyclic graph was run";
  } catch (const promptly::graph_cycle& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("graph \"loopy\": the dependencies form a cycle: \"a\" -> \"b\" -> \"c\" -> \"a\""),
              std::string::npos)
        << msg;
  }
  EXPECT_FALSE(g.running());
  // Unnamed tasks are named by id; a long cycle is abbreviated.
  promptly::graph h;
  std::vector<promptly::graph_task> ring;
  for (int i = 0; i < 30; ++i) ring.push_back(h.emplace([] {}));
  for (int i = 0; i < 30; ++i) ring[i].precede(ring[(i + 1) % 30]);
  try {
    (void)h.run(rt);
    FAIL();
  } catch (const promptly::graph_cycle& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("an unnamed graph: the dependencies form a cycle: #0 -> #1 -> "), std::string::npos) << msg;
    EXPECT_NE(msg.find("(21 more tasks) -> #0"), std::string::npos) << msg;
  }
}

TEST(GraphCycle, CycleInALargeShuffledGraphIsFound) {
  promptly::runtime rt{workers(2)};
  const std::size_t n = scaled(50000, 10);
  dag d(n, 77, true);
  observations obs(n);
  promptly::graph g;
  build_checked(g, d, obs);
  g.run(rt).get();  // acyclic: runs
  // Close a cycle: an edge from a task deep in the graph back to one of its
  // predecessors.
  std::uint32_t last = d.order[n - 1];
  for (std::size_t pos = n - 1; d.pred[last].empty(); last = d.order[--pos]) ASSERT_GT(pos, 0u);
  g.task(last).precede(g.task(d.pred[last][0]));
  EXPECT_THROW((void)g.run(rt), promptly::graph_cycle);
  EXPECT_FALSE(g.running());
}

// ------------------------------------------------------------ docs example

// The example of docs/graphs.md, compiled and run.
TEST(GraphDocs, QuickStart) {
  std::vector<std::string> log;
  std::atomic<int> transformed{0};
  auto read_input = [&] { log.push_back("load"); };
  auto transform_a = [&] { transformed.fetch_add(1); };
  auto transform_b = [&] { transformed.fetch_add(1); };
  auto write_output = [&] { log.push_back("save " + std::to_string(transformed.load())); };

  promptly::runtime rt;
  promptly::graph g("pipeline");
  auto load  = g.emplace([&] { read_input(); }).name("load");
  auto left  = g.emplace([&] { transform_a(); }).name("left");
  auto right = g.emplace([&] { transform_b(); }).name("right");
  auto save  = g.emplace([&] { write_output(); }).name("save");
  load.precede(left, right);            // load runs before left and right
  save.succeed(left, right);            // save runs after both
  promptly::graph_run run = g.run(rt);  // returns at once
  run.get();                            // waits; rethrows a task's exception
  g.run(rt).get();                      // and again

  EXPECT_EQ(log, (std::vector<std::string>{"load", "save 2", "load", "save 4"}));
}

// ------------------------------------------------------------------ levels

TEST(GraphLevels, RunsAtTheRequestedOrCallersLevel) {
  promptly::runtime_config cfg = workers(2);
  cfg.levels = 3;
  promptly::runtime rt{cfg};
  promptly::graph g;
  std::vector<unsigned> seen(4, 99);
  auto a = g.emplace([&] { seen[0] = promptly::current_level(); });
  auto b = g.emplace([&] { seen[1] = promptly::current_level(); });
  auto c = g.emplace([&] { seen[2] = promptly::current_level(); });
  auto d = g.emplace([&] { seen[3] = promptly::current_level(); });
  a.precede(b, c);
  d.succeed(b, c);
  g.run(rt, promptly::level{2}).get();
  EXPECT_EQ(seen, (std::vector<unsigned>{2, 2, 2, 2}));
  rt.run(promptly::level{1}, [&] { g.run(rt).get(); });  // the caller's level
  EXPECT_EQ(seen, (std::vector<unsigned>{1, 1, 1, 1}));
  g.run(rt).get();  // outside the workers: level 0
  EXPECT_EQ(seen, (std::vector<unsigned>{0, 0, 0, 0}));
  EXPECT_THROW((void)g.run(rt, promptly::level{3}), std::out_of_range);
  EXPECT_FALSE(g.running());
}
