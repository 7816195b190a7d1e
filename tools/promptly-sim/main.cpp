// promptly-sim: simulate Promptly's scheduler on a workload (docs/simulator.md).
//   promptly-sim run --workload F --workers P --policy NAME [--json OUT] ...
//   promptly-sim gen KIND [options] --out F
// Exit status: 0 done, 1 the run did not complete (time limit or lost work:
// the message says which), 2 bad input.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/workload.hpp"

namespace sim = promptly::sim;

namespace {

// The "samples_us" array of a JSON file (bench-bin/sim_vcpu_wake --json), or errors naming the problem.
std::vector<double> read_wake_samples(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("promptly-sim: cannot read --wake-samples '" + path + "'");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("promptly-sim: --wake-samples '" + path + "' is not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("samples_us") || !j["samples_us"].is_array() || j["samples_us"].empty())
    throw std::runtime_error("promptly-sim: --wake-samples '" + path + "' needs a non-empty \"samples_us\" array");
  std::vector<double> out;
  for (const auto& x : j["samples_us"]) {
    if (!x.is_number()) throw std::runtime_error("promptly-sim: --wake-samples '" + path + "': a sample is not a number");
    out.push_back(x.get<double>());
  }
  return out;  // the engine refuses negative or infinite ones
}

nlohmann::json to_json(const sim::result& r) {
  nlohmann::json reqs = nlohmann::json::array();
  for (const sim::request_result& q : r.requests)
    reqs.push_back({{"index", q.index}, {"kind", q.kind}, {"pool", q.pool}, {"release_us", q.release_us},
                    {"start_us", q.start_us}, {"finish_us", q.finish_us}, {"response_us", q.response_us},
                    {"work_us", q.work_us}, {"span_us", q.span_us}});
  return {{"source", "sim"},        {"workers", r.workers},     {"policy", r.policy},
          {"makespan_us", r.makespan_us}, {"busy_us", r.busy_us}, {"awake_us", r.awake_us},
          {"utilization", r.utilization()}, {"nodes", r.nodes},  {"steals", r.steals},
          {"mugs", r.mugs},         {"moves", r.moves},         {"sleeps", r.sleeps},
          {"naps", r.naps},         {"wakes", r.wakes},         {"decisions", r.decisions},
          {"quanta", r.quanta},     {"events", r.events},       {"completed", r.completed},
          {"problem", r.problem},   {"requests", std::move(reqs)}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"promptly-sim: a discrete-event simulator of Promptly's scheduler (docs/simulator.md)"};
  app.require_subcommand(1);

  sim::config cfg;
  std::string workload_path, json_out;
  CLI::App* run = app.add_subcommand("run", "simulate a workload file");
  run->add_option("--workload", workload_path, "workload JSON (promptly-sim gen, or bench/sim/validate.py)")->required();
  run->add_option("--workers", cfg.workers, "simulated cores")->check(CLI::Range(1u, 65536u));
  run->add_option("--policy", cfg.policy, "a policy name: oblivious, prompt, aps, fair, equi, drep, ...");
  run->add_option("--seed", cfg.seed, "random seed of the probes and the fair policy");
  run->add_flag("--pool-per-request", cfg.pool_per_request, "each request in a pool of its own (the job server)");
  run->add_option("--serpt-speedup-exponent", cfg.serpt_speedup_exponent, "serpt: p of the speedup k^p, in (0, 1]");
  run->add_option("--serpt-slowdown-cap", cfg.serpt_slowdown_cap, "serpt: the slowdown whose deadline orders the jobs");
  run->add_option("--serpt-due-core-share", cfg.serpt_due_core_share,
                  "serpt: the share of the cores serving the jobs past their slowdown deadline in deadline order")
      ->check(CLI::Range(0.0, 1.0));
  run->add_option("--serpt-work-per-core-us", cfg.serpt_work_per_core_us, "serpt: expected work per core a job can use")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--serpt-start-wait-us", cfg.serpt_start_wait_us, "serpt: first-core bound")->check(CLI::PositiveNumber);
  run->add_option("--serpt-quantum-us", cfg.serpt_quantum_us, "serpt: the re-ranking period")->check(CLI::Range(1.0, 1e9));
  run->add_flag("--never-sleep", cfg.never_sleep, "thieves never sleep (the ABP baseline)");
  run->add_option("--json", json_out, "write the result here (default: stdout)");
  double quantum_us = static_cast<double>(cfg.aps.quantum.count());
  run->add_option("--aps-rho", cfg.aps.rho, "aps: responsiveness (desire growth), > 1");
  run->add_option("--aps-delta", cfg.aps.delta, "aps: efficiency threshold, in (0, 1]");
  run->add_option("--aps-quantum-us", quantum_us, "aps: the quantum L")->check(CLI::PositiveNumber);
  run->add_flag("--aps-exact", cfg.aps.exact, "aps: I-Cilk's rules as written");
  run->add_option("--fair-weights", cfg.fair.weights, "fair: the criterion, one integer weight per level (e.g. 50,25,25)")
      ->delimiter(',');
  bool independent = false;
  run->add_flag("--fair-independent", independent, "fair: independent sampling (per-worker draws)");
  run->add_option("--wake-us", cfg.cost.wake_us, "cost: a notified sleeper to running")->check(CLI::NonNegativeNumber);
  std::string wake_samples_path;
  run->add_option("--wake-samples", wake_samples_path,
                  "cost: draw each wake-up's cost from this JSON file's \"samples_us\" array (bench-bin/sim_vcpu_wake "
                  "--json writes one) instead of --wake-us");
  run->add_option("--nap-us", cfg.cost.nap_us, "cost: the last thief's nap")->check(CLI::NonNegativeNumber);
  run->add_option("--decision-us", cfg.cost.decision_us, "cost: event to decision")->check(CLI::NonNegativeNumber);
  run->add_option("--steal-us", cfg.cost.steal_us, "cost: a successful steal")->check(CLI::NonNegativeNumber);
  run->add_option("--failed-steal-us", cfg.cost.failed_steal_us, "cost: a failed probe")->check(CLI::PositiveNumber);
  run->add_option("--node-us", cfg.cost.node_us, "cost: per node")->check(CLI::NonNegativeNumber);
  run->add_option("--time-limit-us", cfg.time_limit_us, "stop a run past this simulated time")->check(CLI::PositiveNumber);

  std::string kind, out_path;
  unsigned depth = 10, n = 30, cutoff = 12, iterations = 4096, grain = 64, pool = 0, pools = 1, max_nodes = 1000;
  double leaf_us = 100, node_us = 0, iteration_us = 10, release_us = 0, fork_p = 0.7, min_us = 1, max_us = 100;
  std::uint64_t seed = 1;
  CLI::App* gen = app.add_subcommand("gen", "write a one-request workload");
  gen->add_option("kind", kind, "tree, chain, fib, loop or random")->required()->check(CLI::IsMember({"tree", "chain", "fib", "loop", "random"}));
  gen->add_option("--out", out_path, "the workload file")->required();
  gen->add_option("--depth", depth, "tree: levels");
  gen->add_option("--n", n, "chain: nodes; fib: n");
  gen->add_option("--cutoff", cutoff, "fib: serial below this n");
  gen->add_option("--leaf-us", leaf_us, "tree: leaf work; fib: work per call below the cutoff; chain: node work");
  gen->add_option("--node-us", node_us, "tree, fib: fork and join work");
  gen->add_option("--iterations", iterations, "loop: iterations");
  gen->add_option("--iteration-us", iteration_us, "loop: work per iteration");
  gen->add_option("--grain", grain, "loop: iterations per leaf");
  gen->add_option("--max-nodes", max_nodes, "random: node budget");
  gen->add_option("--fork-p", fork_p, "random: probability a node forks")->check(CLI::Range(0.0, 1.0));
  gen->add_option("--min-us", min_us, "random: shortest strand");
  gen->add_option("--max-us", max_us, "random: longest strand");
  gen->add_option("--seed", seed, "random: seed");
  gen->add_option("--pool", pool, "the request's pool (level)");
  gen->add_option("--pools", pools, "pools in the workload");
  gen->add_option("--release-us", release_us, "the request's release time");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*gen) {
      sim::request r = kind == "tree"    ? sim::fork_join_tree(depth, leaf_us, node_us)
                       : kind == "chain" ? sim::chain(n, leaf_us)
                       : kind == "fib"   ? sim::fib_dag(n, cutoff, leaf_us, node_us)
                       : kind == "loop"  ? sim::parallel_loop(iterations, iteration_us, grain)
                                         : sim::random_series_parallel(seed, max_nodes, fork_p, 4, min_us, max_us);
      r.pool = pool;
      r.release_us = release_us;
      r.kind = kind;
      sim::workload w;
      w.pools = pools;
      w.requests.push_back(std::move(r));
      sim::validate(w);
      sim::save(w, out_path);
      std::cerr << "promptly-sim: wrote " << out_path << " (" << w.requests[0].nodes.size() << " nodes, work "
                << sim::work_of(w.requests[0]) << " us, span " << sim::span_of(w.requests[0]) << " us)\n";
      return 0;
    }
    cfg.aps.quantum = std::chrono::microseconds(static_cast<long long>(quantum_us));
    if (independent) cfg.fair.sampling = promptly::fair_sampling::independent;
    if (!wake_samples_path.empty()) cfg.cost.wake_samples_us = read_wake_samples(wake_samples_path);
    const sim::workload w = sim::load(workload_path);
    const sim::result r = sim::simulate(w, cfg);
    const std::string text = to_json(r).dump(1);
    if (json_out.empty()) {
      std::cout << text << '\n';
    } else {
      std::ofstream out(json_out);
      out << text << '\n';
      if (!out) throw std::runtime_error("promptly-sim: cannot write '" + json_out + "'");
    }
    if (!r.completed) {
      std::cerr << "promptly-sim: the run did not complete: " << r.problem << '\n';
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
}
