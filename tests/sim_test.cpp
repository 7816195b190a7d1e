// The scheduler simulator (src/sim, docs/simulator.md): workloads are
// checked and round-trip through JSON; a run does every node once and ends
// (no lost work, no lost wake-up: Lemma 1' of src/sched/README.md) under
// every policy, on random prioritized DAGs, at 1 to 256 cores; and the
// papers' bounds hold on those DAGs:
//  * any schedule: makespan >= max(W / P, S) (a sanity check of the clock);
//  * one worker: makespan = W + the per-node cost, plus one start-up;
//  * work stealing: makespan <= W / P + 2 S + the costs of the steals,
//    wake-ups and naps it did (Blumofe and Leiserson's W / P + O(S), plus
//    what the mechanism charged; a nap delays discovery by at most its
//    length, Lemma 1');
//  * prompt (I-Cilk's prompt scheduling, Sec. 3): an urgent request's
//    response <= W / P + S of the request, plus one decision, one wake-up,
//    the longest less urgent strand (a core switches only at a boundary),
//    with work stealing's factor 2 on W / P + S;
//  * chain on many cores: the sleep protocol keeps the CPU use near one core
//    (Taskflow's Fig. 3 shape), where never-sleep uses every core;
//  * fairly prompt scheduling: the low level's stretch follows 1 / F.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "sim/engine.hpp"
#include "sim/workload.hpp"

namespace sim = promptly::sim;

namespace {

sim::workload one(sim::request r, std::uint32_t pools = 1) {
  sim::workload w;
  w.pools = pools;
  w.requests.push_back(std::move(r));
  return w;
}

// Random prioritized workload: `count` random series-parallel requests at
// random levels and release times. Deterministic for the seed.
sim::workload random_workload(std::uint64_t seed, std::uint32_t levels, unsigned count) {
  std::mt19937_64 rng(seed);
  sim::workload w;
  w.pools = levels;
  for (unsigned i = 0; i < count; ++i) {
    sim::request r = sim::random_series_parallel(rng(), 20 + rng() % 300, 0.6, 4, 1, 50 + rng() % 200);
    r.pool = static_cast<std::uint32_t>(rng() % levels);
    r.release_us = static_cast<double>(rng() % 20000);
    w.requests.push_back(std::move(r));
  }
  std::sort(w.requests.begin(), w.requests.end(), [](const auto& a, const auto& b) { return a.release_us < b.release_us; });
  return w;
}

double max_strand(const sim::request& r) {
  double m = 0;
  for (const sim::node& n : r.nodes) m = std::max(m, n.work_us);
  return m;
}

// A request placed at a level, a release time and a kind.
sim::request at(sim::request r, std::uint32_t pool, double release_us, const char* kind) {
  r.pool = pool;
  r.release_us = release_us;
  r.kind = kind;
  return r;
}

sim::config config_for(unsigned workers, const char* policy, std::uint64_t seed, double nap_us) {
  sim::config c;
  c.workers = workers;
  c.policy = policy;
  c.seed = seed;
  c.cost.nap_us = nap_us;
  return c;
}

// What a request met while it was in the system: the work at its level or
// above (its own included), the spans of the more urgent requests, how many
// arrived (each moves the cores up and back), and the longest strand of any
// request it overlapped.
struct overlap {
  double competitive = 0, spans_above = 0, strand = 0;
  unsigned preemptions = 0;
};

overlap overlap_of(const sim::workload& w, const sim::result& r, const sim::request_result& a) {
  overlap o;
  for (std::size_t k = 0; k < w.requests.size(); ++k) {
    const sim::request_result& b = r.requests[k];
    if (!(b.release_us < a.finish_us && b.finish_us > a.release_us)) continue;
    if (b.pool <= a.pool) o.competitive += b.work_us;
    if (b.pool < a.pool) {
      ++o.preemptions;
      o.spans_above += b.span_us;
    }
    o.strand = std::max(o.strand, max_strand(w.requests[k]));
  }
  return o;
}

}  // namespace

TEST(SimWorkload, BadWorkloadsAreRefusedNamingTheProblem) {
  auto refused = [](const sim::workload& w, const std::string& part) {
    try {
      sim::validate(w);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted; expected an error naming '" << part << "'";
  };
  sim::request r = sim::chain(3, 1);
  r.nodes[2].succ.push_back(1);
  refused(one(r), "successors must be later nodes");
  sim::request two_roots = sim::chain(3, 1);
  two_roots.nodes[0].succ.clear();
  refused(one(two_roots), "node 0 must be the only root");
  refused(one(sim::chain(2, 1), 0), "at least one pool");
  sim::request high = sim::chain(2, 1);
  high.pool = 3;
  refused(one(high, 2), "runs at pool 3");
  sim::request neg = sim::chain(2, -1);
  refused(one(neg), "negative work");
  refused(one(sim::request{}), "has no nodes");
  EXPECT_THROW(sim::from_json(nlohmann::json{{"pools", 1}}), std::invalid_argument);
}

TEST(SimWorkload, GeneratorsHaveTheirWorkAndSpanAndRoundTrip) {
  const sim::request t = sim::fork_join_tree(4, 10, 1);
  EXPECT_DOUBLE_EQ(sim::work_of(t), 8 * 10 + 14 * 1);   // 8 leaves; 7 forks and 7 joins
  EXPECT_DOUBLE_EQ(sim::span_of(t), 10 + 6 * 1);        // 3 forks, a leaf, 3 joins
  const sim::request c = sim::chain(100, 2);
  EXPECT_DOUBLE_EQ(sim::work_of(c), 200);
  EXPECT_DOUBLE_EQ(sim::span_of(c), 200);
  const sim::request f = sim::fib_dag(10, 10, 1);         // below the cutoff: one strand of fib(10)'s 177 calls
  EXPECT_EQ(f.nodes.size(), 1u);
  EXPECT_DOUBLE_EQ(sim::work_of(f), 177);
  const sim::request l = sim::parallel_loop(1000, 1, 100);
  EXPECT_DOUBLE_EQ(sim::work_of(l), 1000);
  const sim::workload w = random_workload(7, 3, 20);
  const sim::workload back = sim::from_json(nlohmann::json::parse(sim::to_json(w).dump()));
  ASSERT_EQ(back.requests.size(), w.requests.size());
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    EXPECT_EQ(back.requests[i].nodes.size(), w.requests[i].nodes.size());
    EXPECT_DOUBLE_EQ(sim::work_of(back.requests[i]), sim::work_of(w.requests[i]));
    EXPECT_EQ(back.requests[i].pool, w.requests[i].pool);
  }
}

TEST(SimEngine, BadConfigurationsAreRefused) {
  sim::config c;
  c.workers = 0;
  EXPECT_THROW(sim::simulate(one(sim::chain(2, 1)), c), std::invalid_argument);
  c.workers = 2;
  c.policy = "no-such-policy";
  EXPECT_THROW(sim::simulate(one(sim::chain(2, 1)), c), std::invalid_argument);
}

// Wake costs drawn from measured samples (costs::wake_samples_us): one repeated sample is the
// constant cost exactly; a tail in the samples reaches the requests that wake sleeping workers;
// a sample that is no cost is refused.
TEST(SimEngine, WakeCostsDrawnFromSamples) {
  sim::workload w;
  w.pools = 1;
  for (int k = 0; k < 30; ++k)  // 30 requests 2 ms apart: both workers asleep before each one
    w.requests.push_back(at(sim::fork_join_tree(3, 200), 0, 2000.0 * k, "urgent"));
  auto run = [&](std::vector<double> samples, double constant) {
    sim::config c = config_for(2, "prompt", 3, 1000);
    c.cost.wake_us = constant;
    c.cost.wake_samples_us = std::move(samples);
    return sim::simulate(w, c);
  };
  const sim::result constant = run({}, 35), repeated = run({35, 35, 35}, 1);
  ASSERT_EQ(constant.requests.size(), repeated.requests.size());
  for (std::size_t i = 0; i < constant.requests.size(); ++i)
    EXPECT_DOUBLE_EQ(constant.requests[i].finish_us, repeated.requests[i].finish_us) << i;
  EXPECT_GT(constant.wakes, 30u);

  auto slowest = [](const sim::result& r) {
    double m = 0;
    for (const auto& q : r.requests) m = std::max(m, q.response_us);
    return m;
  };
  std::vector<double> tail(19, 35.0);
  tail.push_back(3000);  // one wake-up in 20 takes 3 ms, as this VM's host sometimes does
  const sim::result with_tail = run(tail, 1);
  EXPECT_GT(slowest(with_tail), slowest(constant) + 1000) << "a 3 ms wake-up must show in some response";
  EXPECT_TRUE(with_tail.completed);

  sim::config bad = config_for(2, "prompt", 3, 1000);
  bad.cost.wake_samples_us = {10, -1};
  EXPECT_THROW(sim::simulate(w, bad), std::invalid_argument);
  bad.cost.wake_samples_us = {std::numeric_limits<double>::infinity()};
  EXPECT_THROW(sim::simulate(w, bad), std::invalid_argument);
}

TEST(SimEngine, OneWorkerRunsTheWorkAndTheNodeCostsExactly) {
  for (const char* policy : {"oblivious", "prompt", "aps", "fair"}) {
    sim::config c;
    c.workers = 1;
    c.policy = policy;
    const sim::request r = sim::random_series_parallel(3, 500, 0.6, 4, 1, 100);
    const sim::result res = sim::simulate(one(r), c);
    ASSERT_TRUE(res.completed) << policy << ": " << res.problem;
    EXPECT_EQ(res.nodes, r.nodes.size());
    // Plus the start: a decision and a wake-up if the policy gives the core
    // only once the pool has work (aps), the first move and take.
    const double exact = sim::work_of(r) + r.nodes.size() * c.cost.node_us;
    EXPECT_GE(res.makespan_us, exact - 1e-6) << policy;
    EXPECT_LE(res.makespan_us, exact + c.cost.decision_us + c.cost.wake_us + c.cost.move_us + c.cost.steal_us + 1e-6) << policy;
  }
}

// The property test: every policy, random prioritized DAGs, 1..256 cores.
TEST(SimBounds, EveryRequestEndsAndNoScheduleBeatsWorkOverPOrSpan) {
  const std::vector<std::string> policies = {"oblivious", "prompt", "aps", "fair", "equi", "drep", "drep-steal-boundary", "asteal"};
  int runs = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed)
    for (const unsigned p : {1u, 2u, 3u, 8u, 64u, 256u})
      for (const std::string& policy : policies) {
        const bool jobs = policy == "equi" || policy.rfind("drep", 0) == 0 || policy == "asteal";
        const sim::workload w = random_workload(seed * 7919 + p, jobs ? 2 : 3, 12);
        sim::config c;
        c.workers = p;
        c.policy = policy;
        c.seed = seed;
        c.pool_per_request = jobs;
        c.check_lemma1 = !jobs;
        const sim::result r = sim::simulate(w, c);
        ++runs;
        ASSERT_TRUE(r.completed) << policy << " P=" << p << " seed " << seed << ": " << r.problem;
        std::size_t nodes = 0;
        double work = 0;
        for (const sim::request& q : w.requests) {
          nodes += q.nodes.size();
          work += sim::work_of(q);
        }
        EXPECT_EQ(r.nodes, nodes) << policy << " P=" << p;
        for (const sim::request_result& q : r.requests) {
          EXPECT_GE(q.response_us, q.span_us - 1e-9) << policy << " P=" << p << " request " << q.index;
          EXPECT_GE(q.finish_us, q.start_us);
        }
        EXPECT_GE(r.makespan_us + 1e-9, work / p);
        EXPECT_EQ(r.undersubscribed_us, 0) << policy << " P=" << p << " seed " << seed;
        EXPECT_NEAR(r.busy_us, work, 1e-6 * work);
      }
  EXPECT_EQ(runs, 6 * 6 * 8);
}

TEST(SimBounds, WorkStealingStaysWithinTheGreedyBoundPlusItsCosts) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    for (const unsigned p : {2u, 4u, 16u, 64u}) {
      const sim::request r = sim::random_series_parallel(seed, 4000, 0.8, 4, 5, 100);
      sim::config c;
      c.workers = p;
      const sim::result res = sim::simulate(one(r), c);
      ASSERT_TRUE(res.completed) << res.problem;
      const double w = sim::work_of(r), s = sim::span_of(r);
      const double mechanism = r.nodes.size() * c.cost.node_us / p +
                               static_cast<double>(res.steals) * (c.cost.steal_us + c.cost.move_us) / p +
                               static_cast<double>(res.wakes) * c.cost.wake_us / p + c.cost.decision_us + c.cost.wake_us +
                               static_cast<double>(res.naps) * c.cost.nap_us;
      // Work stealing is not greedy: a constant factor on the span (Blumofe
      // and Leiserson: expected W/P + O(S)); 2 is generous at these sizes.
      EXPECT_LE(res.makespan_us, w / p + 2 * s + mechanism) << "seed " << seed << " P=" << p << " W " << w << " S " << s;
    }
}

// With a short nap the bound is the scheduling's own; with the default 1 ms
// nap, parallelism a request exposes while every thief sleeps may wait for
// the napping last thief: one nap more (Lemma 1').
TEST(SimBounds, PromptServesAnUrgentRequestWithinItsOwnBound) {
  for (const double nap : {20.0, 1000.0})
    for (std::uint64_t seed = 1; seed <= 8; ++seed)
      for (const unsigned p : {2u, 4u, 16u}) {
        sim::workload w;
        w.pools = 2;
        const sim::request bg = at(sim::random_series_parallel(seed, 3000, 0.8, 4, 10, 150), 1, 0, "background");
        w.requests.push_back(bg);
        for (int i = 0; i < 10; ++i)
          w.requests.push_back(at(sim::random_series_parallel(seed * 100 + i, 60, 0.7, 3, 10, 100), 0, 500 + 3000.0 * i, "urgent"));
        sim::config c;
        c.workers = p;
        c.policy = "prompt";
        c.cost.nap_us = nap;
        const sim::result res = sim::simulate(w, c);
        ASSERT_TRUE(res.completed) << res.problem;
        const double lower_strand = max_strand(bg);
        for (const sim::request_result& q : res.requests) {
          if (q.kind != "urgent") continue;
          const double bound = c.cost.decision_us + c.cost.wake_us + lower_strand + c.cost.move_us +
                               2 * (q.work_us / p + q.span_us) + 10 + (nap > c.cost.wake_us ? nap : 0);
          EXPECT_LE(q.response_us, bound) << "nap " << nap << " seed " << seed << " P=" << p << " request " << q.index
                                          << " W " << q.work_us << " S " << q.span_us;
        }
      }
}

TEST(SimShapes, AChainKeepsAboutOneCoreBusyUnlessThievesNeverSleep) {
  const sim::workload w = one(sim::chain(2000, 50));
  for (const unsigned p : {4u, 40u}) {
    sim::config c;
    c.workers = p;
    const sim::result sleeping = sim::simulate(w, c);
    c.never_sleep = true;
    const sim::result spinning = sim::simulate(w, c);
    ASSERT_TRUE(sleeping.completed && spinning.completed);
    EXPECT_LT(sleeping.utilization(), 1.5) << "P=" << p;
    EXPECT_GT(spinning.utilization(), 0.9 * p) << "P=" << p;
    EXPECT_NEAR(sleeping.makespan_us, spinning.makespan_us, 0.01 * spinning.makespan_us);
  }
}

TEST(SimShapes, PrioritiesCutTheUrgentTailThatObliviousSchedulingLeaves) {
  sim::workload w;
  w.pools = 2;
  sim::request bg = sim::fork_join_tree(12, 100);
  bg.pool = 1;
  w.requests.push_back(bg);
  for (int i = 0; i < 20; ++i) {
    sim::request u = sim::fork_join_tree(3, 200);
    u.pool = 0;
    u.release_us = 2000 + 5000.0 * i;
    u.kind = "urgent";
    w.requests.push_back(u);
  }
  auto worst = [&](const char* policy) {
    sim::config c;
    c.policy = policy;
    const sim::result r = sim::simulate(w, c);
    EXPECT_TRUE(r.completed) << r.problem;
    double m = 0;
    for (const auto& q : r.requests)
      if (q.kind == "urgent") m = std::max(m, q.response_us);
    return m;
  };
  const double prompt = worst("prompt"), oblivious = worst("oblivious");
  EXPECT_LT(prompt, 800 / 2.0 + 200 + 100 + 100);  // W/P + S + one background strand + costs
  EXPECT_GT(oblivious, 5 * prompt);
}

// Fairly prompt scheduling (ICFP 2019, Thm. and Table 1): under criterion
// F, the lowest level's stretch is at most 1 / F(low), with the paper's
// constants; the model has no memory system, so the compute-bound ratio
// (close to 1) is what it must show. A time sink in the middle takes every
// donated cycle, an interactive level at the top comes and goes.
TEST(SimBounds, FairStretchOfTheLowLevelFollowsTheCriterion) {
  sim::workload w;
  w.pools = 3;
  sim::request low = sim::fib_dag(24, 10, 16 * 50000.0 / 150049);  // ~50 ms alone on 16 cores
  low.pool = 2;
  low.kind = "low";
  w.requests.push_back(low);
  sim::request sink = sim::fork_join_tree(12, 5000);  // 2048 x 5 ms: outlasts the low kernel
  sink.pool = 1;
  w.requests.push_back(sink);
  for (int i = 0; i < 20; ++i) {
    sim::request u = sim::fork_join_tree(3, 300);
    u.release_us = 10000.0 * i;
    u.kind = "interactive";
    w.requests.push_back(u);
  }
  auto low_time = [&](std::vector<long long> weights, std::uint64_t seed) {
    sim::config c;
    c.workers = 16;
    c.policy = "fair";
    c.seed = seed;
    c.fair.weights = std::move(weights);
    const sim::result r = sim::simulate(w, c);
    EXPECT_TRUE(r.completed) << r.problem;
    return r.requests[0].finish_us;
  };
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const double base = low_time({0, 0, 100}, seed);
    const double half = low_time({50, 0, 50}, seed) / base;
    const double quarter = low_time({50, 25, 25}, seed) / base;
    EXPECT_LE(half, 2 * 1.15) << "seed " << seed;
    EXPECT_GE(half, 2 * 0.85) << "seed " << seed;
    EXPECT_LE(quarter, 4 * 1.15) << "seed " << seed;
    EXPECT_GE(quarter, 4 * 0.85) << "seed " << seed;
  }
  // A bad criterion is refused as the runtime refuses it.
  sim::config bad;
  bad.policy = "fair";
  bad.fair.weights = {1, 2, 3, 4};
  EXPECT_THROW(sim::simulate(w, bad), std::invalid_argument);
}

// Responsive parallelism with futures and state, Thm. 2.1: in a prompt
// schedule a thread a of priority p ends within (W_comp + (P - 1) S_a) / P,
// where W_comp is the work of the threads at priority p or more urgent that
// may run in parallel with a (here: whose time in the system overlaps a's,
// a itself included; an over-count, so a looser bound) and S_a its a-span
// (here the request's span: requests share no edges).
// Promptly's `prompt` serves levels exclusively: every core stays at the
// most urgent level with ready work even when that level cannot use them
// all (src/policy/prompt.cpp), so it is not the greedy prompt schedule of
// the theorem, and a less urgent request also waits out the span of each
// more urgent one: the a-span term becomes the sum of those spans and a's
// (with S_a alone, 4 of 288 requests here missed the bound, all at 32
// cores). Work stealing is not greedy either: factor 2. The mechanism adds,
// each time the cores switch levels, a decision, a wake-up, a move and a
// strand a core finishes first: once at the start and once per more urgent
// request arriving meanwhile. A short nap, as in the prompt test above.
TEST(SimBounds, PromptMeetsTheResponseBoundOfWellFormedDags) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed)
    for (const unsigned p : {2u, 8u, 32u}) {
      const sim::workload w = random_workload(seed * 104729 + p, 3, 16);
      const sim::config c = config_for(p, "prompt", seed, 20);
      const sim::result r = sim::simulate(w, c);
      ASSERT_TRUE(r.completed) << r.problem;
      for (const sim::request_result& a : r.requests) {
        const overlap o = overlap_of(w, r, a);
        const double competitor = o.competitive, strand = o.strand, spans = a.span_us + o.spans_above;
        const unsigned preemptions = o.preemptions;
        // Each arrival of more urgent work moves the cores up and back: a
        // decision, a wake-up, a move and a strand boundary each way.
        const double switch_cost = c.cost.decision_us + c.cost.wake_us + c.cost.move_us + strand;
        const double bound = 2 * (competitor + (p - 1) * spans) / p + (preemptions + 1) * switch_cost + 10;
        EXPECT_LE(a.response_us, bound) << "seed " << seed << " P=" << p << " request " << a.index << " at level "
                                        << a.pool << ": W_comp " << competitor << " S " << a.span_us << " spans " << spans;
      }
    }
}

// I-Cilk, Thm. 4.1 (APS): a task at the most urgent level responds within
// W / (delta P) + O(S / (1 - delta) + L lg P); at level l within
// (1 + rho) W / (delta P) + O(S / (1 - delta) + (l + k) L lg P), W the
// competitive work (at its level or above while it is active), k the edges
// between levels inside it (0 here). The O()s get the constant 2 (not the
// paper's: it states none), and the mechanism's level switches are added
// as in the test above. Promptly's APS variant is checked (the default).
// The same check fails 83 times under the oblivious policy (the urgent
// requests wait behind the background job), so it can fail.
TEST(SimBounds, ApsMeetsICilksResponseBound) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed)
    for (const unsigned p : {2u, 8u, 32u}) {
      // A large background job at the least urgent level, random requests above it (the bound
      // must bite: with only small requests its L lg P term alone exceeds every response, and
      // the oblivious policy passed too).
      sim::workload w = random_workload(seed * 7727 + p, 3, 12);
      w.requests.insert(w.requests.begin(), at(sim::fork_join_tree(13, 100), 2, 0, "background"));  // 410 ms of work
      for (int i = 0; i < 6; ++i)
        w.requests.push_back(at(sim::random_series_parallel(seed * 31 + i, 600, 0.8, 4, 20, 200), 0, 5000.0 + 15000.0 * i, "urgent"));
      const sim::config c = config_for(p, "aps", seed, 20);
      const sim::result r = sim::simulate(w, c);
      ASSERT_TRUE(r.completed) << r.problem;
      const double delta = c.aps.delta, rho = c.aps.rho;
      const double quantum = static_cast<double>(c.aps.quantum.count());
      for (const sim::request_result& a : r.requests) {
        const overlap o = overlap_of(w, r, a);
        const double competitive = o.competitive, strand = o.strand;
        const unsigned preemptions = o.preemptions;
        const double switch_cost = c.cost.decision_us + c.cost.wake_us + c.cost.move_us + strand;
        const double level = a.pool;  // 0 = the paper's priority 1
        const double bound = (level == 0 ? 1.0 : 1.0 + rho) * competitive / (delta * p) +
                             2 * (a.span_us / (1 - delta) + (level + 1) * quantum * std::log2(2.0 * p)) +
                             (preemptions + 1) * switch_cost;
        EXPECT_LE(a.response_us, bound) << "seed " << seed << " P=" << p << " request " << a.index << " at level "
                                        << a.pool << ": W " << competitive << " S " << a.span_us;
      }
    }
}
