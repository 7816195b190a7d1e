// Workloads for the simulator: checks, measures, JSON and generators
// (workload.hpp states the invariants).
#include "workload.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>

namespace promptly::sim {

namespace {

std::string where(std::size_t r, std::size_t n) {
  return "request " + std::to_string(r) + " node " + std::to_string(n);
}

// Appends a node and returns its index.
std::uint32_t add(request& r, double work_us) {
  r.nodes.push_back(node{work_us, {}});
  return static_cast<std::uint32_t>(r.nodes.size() - 1);
}

// A subgraph's entry and exit nodes (one source, one sink).
struct ends {
  std::uint32_t entry;
  std::uint32_t exit;
};

// Fork node, the children in order (each built by `child(k)`), join node.
// Nodes are appended in that order, so every edge points forward.
template <class Child>
ends fork_join(request& r, unsigned children, double node_us, Child&& child) {
  const std::uint32_t fork = add(r, node_us);
  std::vector<ends> parts;
  parts.reserve(children);
  for (unsigned k = 0; k < children; ++k) parts.push_back(child(k));
  const std::uint32_t join = add(r, node_us);
  for (const ends& e : parts) {
    r.nodes[fork].succ.push_back(e.entry);
    r.nodes[e.exit].succ.push_back(join);
  }
  return {fork, join};
}

ends tree(request& r, unsigned depth, double leaf_us, double node_us) {
  if (depth <= 1) {
    const std::uint32_t n = add(r, leaf_us);
    return {n, n};
  }
  return fork_join(r, 2, node_us, [&](unsigned) { return tree(r, depth - 1, leaf_us, node_us); });
}

double fib_calls(unsigned k) {  // calls made by naive fib(k): 2 fib(k+1) - 1
  double a = 0, b = 1;
  for (unsigned i = 0; i < k + 1; ++i) std::tie(a, b) = std::pair{b, a + b};
  return 2 * a - 1;
}

ends fib(request& r, unsigned n, unsigned cutoff, double leaf_us, double node_us) {
  if (n <= cutoff || n < 2) {
    const std::uint32_t x = add(r, leaf_us * fib_calls(n));
    return {x, x};
  }
  return fork_join(r, 2, node_us, [&](unsigned k) { return fib(r, n - 1 - k, cutoff, leaf_us, node_us); });
}

ends loop(request& r, unsigned iterations, double iteration_us, unsigned grain) {
  if (iterations <= grain) {
    const std::uint32_t x = add(r, iterations * iteration_us);
    return {x, x};
  }
  const unsigned half = iterations / 2;
  return fork_join(r, 2, 0.0, [&](unsigned k) { return loop(r, k == 0 ? half : iterations - half, iteration_us, grain); });
}

ends random_sp(request& r, std::mt19937_64& rs, unsigned budget, double fork_p, unsigned fanout, double min_us,
               double max_us) {
  auto strand = [&] { return min_us + (max_us - min_us) * unit_interval(rs); };
  if (budget < 4 || fanout < 2 || unit_interval(rs) >= fork_p) {
    const std::uint32_t x = add(r, strand());
    return {x, x};
  }
  const unsigned children = 2 + static_cast<unsigned>(unit_interval(rs) * (fanout - 1));
  const unsigned each = (budget - 2) / children;
  return fork_join(r, children, strand(), [&](unsigned) { return random_sp(r, rs, each, fork_p, fanout, min_us, max_us); });
}

}  // namespace

double unit_interval(std::mt19937_64& rng) noexcept { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void validate(const workload& w) {
  if (w.pools == 0) throw std::invalid_argument("promptly-sim: a workload needs at least one pool");
  for (std::size_t r = 0; r < w.requests.size(); ++r) {
    const request& q = w.requests[r];
    if (q.pool >= w.pools)
      throw std::invalid_argument("promptly-sim: request " + std::to_string(r) + " runs at pool " + std::to_string(q.pool) +
                                  " but the workload has " + std::to_string(w.pools) + " pools");
    if (!std::isfinite(q.size_hint_us))
      throw std::invalid_argument("promptly-sim: request " + std::to_string(r) + " has a size hint that is not finite");
    if (!(q.release_us >= 0)) throw std::invalid_argument("promptly-sim: request " + std::to_string(r) + " has a negative release time");
    if (q.nodes.empty()) throw std::invalid_argument("promptly-sim: request " + std::to_string(r) + " has no nodes");
    std::vector<bool> has_pred(q.nodes.size(), false);
    for (std::size_t n = 0; n < q.nodes.size(); ++n) {
      const node& x = q.nodes[n];
      if (!(x.work_us >= 0)) throw std::invalid_argument("promptly-sim: " + where(r, n) + " has negative work");
      for (const std::uint32_t s : x.succ) {
        if (s <= n || s >= q.nodes.size())
          throw std::invalid_argument("promptly-sim: " + where(r, n) + " has successor " + std::to_string(s) +
                                      ": successors must be later nodes of the same request");
        has_pred[s] = true;
      }
      if (std::set<std::uint32_t>(x.succ.begin(), x.succ.end()).size() != x.succ.size())
        throw std::invalid_argument("promptly-sim: " + where(r, n) + " names a successor twice");
    }
    for (std::size_t n = 1; n < q.nodes.size(); ++n)
      if (!has_pred[n])
        throw std::invalid_argument("promptly-sim: " + where(r, n) + " has no predecessor: node 0 must be the only root");
  }
}

double work_of(const request& r) {
  double w = 0;
  for (const node& n : r.nodes) w += n.work_us;
  return w;
}

double span_of(const request& r) {
  std::vector<double> finish(r.nodes.size(), 0);  // longest path ending at each node, its own work included
  double span = 0;
  for (std::size_t n = 0; n < r.nodes.size(); ++n) {
    finish[n] += r.nodes[n].work_us;
    span = std::max(span, finish[n]);
    for (const std::uint32_t s : r.nodes[n].succ) finish[s] = std::max(finish[s], finish[n]);
  }
  return span;
}

nlohmann::json to_json(const workload& w) {
  nlohmann::json reqs = nlohmann::json::array();
  for (const request& q : w.requests) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const node& n : q.nodes) nodes.push_back(nlohmann::json::array({n.work_us, n.succ}));
    reqs.push_back({{"pool", q.pool}, {"release_us", q.release_us}, {"kind", q.kind}, {"nodes", std::move(nodes)}});
    if (q.size_hint_us >= 0) reqs.back()["size_hint_us"] = q.size_hint_us;
  }
  return {{"format", "promptly-sim-workload-1"}, {"pools", w.pools}, {"requests", std::move(reqs)}};
}

workload from_json(const nlohmann::json& j) {
  if (j.value("format", "") != "promptly-sim-workload-1")
    throw std::invalid_argument("promptly-sim: not a workload file (expected \"format\": \"promptly-sim-workload-1\")");
  workload w;
  w.pools = j.at("pools").get<std::uint32_t>();
  for (const nlohmann::json& q : j.at("requests")) {
    request r;
    r.pool = q.at("pool").get<std::uint32_t>();
    r.release_us = q.at("release_us").get<double>();
    r.kind = q.value("kind", "");
    r.size_hint_us = q.value("size_hint_us", -1.0);
    for (const nlohmann::json& n : q.at("nodes")) r.nodes.push_back(node{n.at(0).get<double>(), n.at(1).get<std::vector<std::uint32_t>>()});
    w.requests.push_back(std::move(r));
  }
  validate(w);
  return w;
}

workload load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("promptly-sim: cannot read workload file '" + path + "'");
  try {
    return from_json(nlohmann::json::parse(in));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("promptly-sim: workload file '" + path + "': " + e.what());
  }
}

void save(const workload& w, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("promptly-sim: cannot write '" + path + "'");
  out << to_json(w).dump() << '\n';
  if (!out) throw std::runtime_error("promptly-sim: writing '" + path + "' failed");
}

request fork_join_tree(unsigned depth, double leaf_us, double node_us) {
  request r;
  tree(r, std::max(depth, 1u), leaf_us, node_us);
  return r;
}

request chain(unsigned n, double node_us) {
  request r;
  for (unsigned i = 0; i < std::max(n, 1u); ++i) {
    add(r, node_us);
    if (i > 0) r.nodes[i - 1].succ.push_back(i);
  }
  return r;
}

request fib_dag(unsigned n, unsigned cutoff, double leaf_us, double node_us) {
  request r;
  fib(r, n, cutoff, leaf_us, node_us);
  return r;
}

request parallel_loop(unsigned iterations, double iteration_us, unsigned grain) {
  request r;
  loop(r, std::max(iterations, 1u), iteration_us, std::max(grain, 1u));
  return r;
}

request random_series_parallel(std::uint64_t seed, unsigned max_nodes, double fork_p, unsigned fanout, double min_us,
                               double max_us) {
  request r;
  std::mt19937_64 rs(seed);
  random_sp(r, rs, std::max(max_nodes, 1u), fork_p, fanout, min_us, max_us);
  return r;
}

}  // namespace promptly::sim
