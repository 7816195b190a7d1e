// UTS, Unbalanced Tree Search (the fairly prompt paper Sec. 6.2.2, after Olivier et al. 2006): a tree whose
// every node has a geometrically distributed number of children (mean b = 4.0) down to a depth
// limit (11 at full scale, as in the fairly prompt paper), plus a small sequential fib at each node "to
// increase the work". Highly unbalanced and unpredictable: the shape is only known while it is
// explored. A node's child count and its children's ids come from hashing the node's id, so the
// tree is a pure function of the root id: the parallel and serial traversals visit the same
// tree. Checksum: node count and a sum over nodes of mix(id), combined.
// Strands: one node's hash and fib(node_fib) (a few us) between two forks.
#pragma once

#include <cmath>
#include <cstdint>

#include "bench_common.hpp"
#include "exec.hpp"
#include "kernel.hpp"

namespace fair_kernels {

class uts_kernel final : public kernel {
public:
    explicit uts_kernel(scale s) : depth_(pick(s, 6, 9, 11)) {
        bench::opaque(node_fib_);  // a run-time value: the per-node fib must not be folded
    }

    std::string_view name() const noexcept override { return "uts"; }
    std::uint64_t run() override { return visit<par>(root_id, 0).checksum(); }
    std::uint64_t run_serial() override { return visit<seq>(root_id, 0).checksum(); }

private:
    static constexpr double branching = 4.0;  // mean children per node (the fairly prompt paper: b = 4.0)
    // Root of a tree of 5,635,618 nodes at depth 11 (352,402 at 9, 5,509 at 6; the expectation
    // at depth 11 is 5.59M. Tree sizes vary
    // wildly with the root; this one was chosen for being close to the expectation).
    static constexpr std::uint64_t root_id = 6;

    struct tally {
        std::uint64_t nodes = 0, hash = 0;
        tally operator+(const tally& o) const { return {nodes + o.nodes, hash + o.hash}; }
        std::uint64_t checksum() const { return mix(nodes) ^ hash; }
    };

    static std::uint64_t work(int n) { return n < 2 ? std::uint64_t(n) : work(n - 1) + work(n - 2); }

    // Geometric distribution with mean b: P(k) = (1-q) q^k with q = b / (1 + b).
    int children(std::uint64_t id, int depth) const {
        if (depth >= depth_) return 0;
        const double u = unit(mix(id ^ 0x5EEDull));
        return int(std::floor(std::log1p(-u) / std::log1p(-1.0 / (1.0 + branching))));
    }

    template <class E>
    tally visit(std::uint64_t id, int depth) const {
        tally t{1, mix(id) + work(node_fib_)};
        const int k = children(id, depth);
        return t + E::template sum<tally>(0, k, 1, [&](int i) { return visit<E>(mix(id * 64 + std::uint64_t(i)), depth + 1); });
    }

    int depth_;
    int node_fib_ = 14;  // the per-node sequential work, fib(14): ~0.4 us
};

}  // namespace fair_kernels
