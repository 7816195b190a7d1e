// A workload for the simulator (docs/simulator.md): requests, each a DAG of
// strands released at a time into a pool, read from and written to JSON so
// that the simulator and a real run (bench/sim/real_run.cpp) execute the very
// same work.
//
// Invariants (checked by validate(), which every loader calls)
//  * Every request has at least one node; node 0 is its only source (the
//    root); every node is reachable from it; edges point to later nodes
//    (node i's successors are > i), so a request is acyclic by construction.
//  * work_us >= 0 for every node; release_us >= 0; pool < pools.
//  * A node runs once all of its predecessors have run. The order of a
//    node's successors is the order a worker takes them in: the first runs
//    next on the same worker, the others are pushed to its deque (a spawn
//    pushes the continuation and runs the child, a graph node keeps one
//    successor and pushes the rest: the same rule).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace promptly::sim {

struct node {
  double work_us = 0;                  // the strand's own work
  std::vector<std::uint32_t> succ;     // successors, in the order they are taken
};

struct request {
  std::uint32_t pool = 0;              // the level (pool) the request runs at; 0 = most urgent
  double release_us = 0;               // when it is submitted, from the run's start
  std::string kind;                    // a label for reports ("urgent", "background", ...)
  std::vector<node> nodes;             // node 0 is the root
  // The size the client announces (us of work; the `serpt` policy's size
  // board); negative: none, the policy uses its prior.
  double size_hint_us = -1;
};

struct workload {
  std::uint32_t pools = 1;             // pools 0..pools-1, ranked by id
  std::vector<request> requests;
};

// Throws std::invalid_argument naming the request, node and problem.
void validate(const workload& w);

// Work (sum of work_us) and span (longest path) of one request, in us.
double work_of(const request& r);
double span_of(const request& r);

nlohmann::json to_json(const workload& w);
// Throws std::invalid_argument (via validate) or nlohmann::json::exception on malformed input.
workload from_json(const nlohmann::json& j);
workload load(const std::string& path);   // throws std::runtime_error naming the file
void save(const workload& w, const std::string& path);

// A draw in [0, 1) from 53 random bits: the same on every platform (the
// standard distributions are not), so a seed gives the same workload and
// the same simulated run everywhere.
double unit_interval(std::mt19937_64& rng) noexcept;

// Generators. Every one is deterministic for its arguments.
// A fork-join divide and conquer of `depth` levels: 2^(depth-1) leaves of
// `leaf_us`, each inner level a fork node and a join node of `node_us`.
request fork_join_tree(unsigned depth, double leaf_us, double node_us = 0);
// A chain of n nodes of `node_us` each (no parallelism).
request chain(unsigned n, double node_us);
// fib(n) as a fork-join DAG with a serial cutoff: fib(k) for k <= cutoff is
// one strand of `leaf_us * fib_calls(k)` (work in proportion to the calls it
// makes), above it a spawn node and a join node of `node_us`.
request fib_dag(unsigned n, unsigned cutoff, double leaf_us, double node_us = 0.05);
// A parallel loop of `iterations` iterations of `iteration_us` each, split
// into chunks of `grain` iterations by binary splitting.
request parallel_loop(unsigned iterations, double iteration_us, unsigned grain);
// A random fork-join request (series-parallel): each node forks 0..fanout
// children with probability `fork_p` up to `max_nodes`, with strand lengths
// drawn uniformly from [min_us, max_us]. Deterministic for `seed`.
request random_series_parallel(std::uint64_t seed, unsigned max_nodes, double fork_p, unsigned fanout, double min_us,
                               double max_us);

}  // namespace promptly::sim
