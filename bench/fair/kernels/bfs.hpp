// BFS (the fairly prompt paper Sec. 6.2.2): breadth-first search from vertex 0 of a random directed graph in a
// compact array-based adjacency list (CSR: offsets + targets). Memory-intensive, with a
// parallel structure that depends on the graph. Out-degrees are uniform in 0..32 (mean 16, as
// the fairly prompt paper's 15M nodes / 240M edges), targets uniform; both are hashes of fixed seeds.
// Parallel: level-synchronous; each level's frontier is cut into chunks of `chunk` vertices,
// a chunk claims unvisited neighbours with a CAS on their distance and appends what it claimed
// to the next frontier with one fetch_add. Serial: the textbook queue BFS (not the elision of
// the parallel one: it is the fastest serial BFS, the right T_s). BFS distances are unique, so
// the checksum (vertices reached, sum of distances) does not depend on the schedule.
// Strands: one chunk, <= 64 * 32 edge visits (~50 us of cache misses here).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "exec.hpp"
#include "kernel.hpp"

namespace fair_kernels {

class bfs_kernel final : public kernel {
public:
    explicit bfs_kernel(scale s)
        : n_(pick<std::uint32_t>(s, 1u << 16, 1u << 20, 6'000'000)), offsets_(n_ + 1), dist_(new std::atomic<std::uint32_t>[n_]),
          frontier_(n_), next_(n_) {
        for (std::uint32_t u = 0; u < n_; ++u) offsets_[u + 1] = offsets_[u] + mix(0xD0000000ull + u) % (2 * mean_degree + 1);
        targets_.resize(offsets_[n_]);
        for (std::uint64_t e = 0; e < targets_.size(); ++e)
            targets_[e] = std::uint32_t((unsigned __int128)mix(0xE0000000ull + e) * n_ >> 64);
    }

    std::string_view name() const noexcept override { return "bfs"; }

    std::uint64_t run() override {
        reset<par>();
        std::uint64_t reached = 1, sum = 0, size = 1;
        for (std::uint32_t d = 1; size > 0; ++d) {
            std::atomic<std::uint64_t> next_size{0};
            par::loop(std::uint64_t{0}, (size + chunk - 1) / chunk, 1, [&](std::uint64_t c) {
                std::uint32_t claimed[chunk * 2 * mean_degree];
                std::uint32_t k = 0;
                for (std::uint64_t i = c * chunk; i < std::min(size, (c + 1) * chunk); ++i) {
                    const std::uint32_t u = frontier_[i];
                    for (std::uint64_t e = offsets_[u]; e < offsets_[u + 1]; ++e) {
                        const std::uint32_t v = targets_[e];
                        std::uint32_t unseen = unvisited;
                        if (dist_[v].load(std::memory_order_relaxed) == unvisited &&
                            dist_[v].compare_exchange_strong(unseen, d, std::memory_order_relaxed))
                            claimed[k++] = v;
                    }
                }
                const std::uint64_t at = next_size.fetch_add(k, std::memory_order_relaxed);
                std::copy(claimed, claimed + k, next_.begin() + std::ptrdiff_t(at));
            });
            frontier_.swap(next_);
            size = next_size.load();
            reached += size;
            sum += size * d;
        }
        return mix(reached) ^ sum;
    }

    std::uint64_t run_serial() override {
        reset<seq>();
        std::uint64_t head = 0, tail = 1, sum = 0;
        while (head < tail) {
            const std::uint32_t u = frontier_[head++], du = dist_[u].load(std::memory_order_relaxed);
            for (std::uint64_t e = offsets_[u]; e < offsets_[u + 1]; ++e) {
                const std::uint32_t v = targets_[e];
                if (dist_[v].load(std::memory_order_relaxed) != unvisited) continue;
                dist_[v].store(du + 1, std::memory_order_relaxed);
                frontier_[tail++] = v;
                sum += du + 1;
            }
        }
        return mix(tail) ^ sum;
    }

private:
    static constexpr std::uint64_t mean_degree = 16;
    static constexpr std::uint64_t chunk = 64;  // frontier vertices per strand
    static constexpr std::uint32_t unvisited = ~0u;

    // Every distance unvisited but the source's; the frontier (or queue) holds the source.
    template <class E>
    void reset() {
        E::loop(std::uint32_t{0}, n_, 1u << 15, [&](std::uint32_t v) { dist_[v].store(unvisited, std::memory_order_relaxed); });
        dist_[0].store(0, std::memory_order_relaxed);
        frontier_[0] = 0;
    }

    std::uint32_t n_;
    std::vector<std::uint64_t> offsets_;
    std::vector<std::uint32_t> targets_;
    std::unique_ptr<std::atomic<std::uint32_t>[]> dist_;
    std::vector<std::uint32_t> frontier_, next_;
};

}  // namespace fair_kernels
