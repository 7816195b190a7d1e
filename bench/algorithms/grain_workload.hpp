// The automatic-grain benches of suite `algorithms`: four loops whose per-index code is shared
// by every program (Promptly without a grain and at hand-picked grains, oneTBB's
// auto_partitioner, the serial loop), so that only the splitting differs:
//
//   sum        sum of n uint32 values in [0, 1000) (parallel_reduce; memory-bound)
//   map        out[i] = 4 rounds of SplitMix64's mix of i, n uint64 outputs (parallel_for)
//   blur       3x3 box blur of a rows x cols uint32 image into a second one, interior pixels
//              (the 2D forms: index_box / blocked_range2d; memory-bound, stencil)
//   irregular  out[i] = (i / 4) rounds of the mix of i: index i costs work proportional to i,
//              so equal-sized pieces are not equal work (parallel_for)
//
// --kind, --n (for blur the image is n x n), --grains g1,g2,...: a program that takes a grain
// runs every grain in each repetition (round-robin, so all see the same drift of this shared
// machine) and reports the best grain's median as region_s, plus `best_grain` and each grain's
// median as region_s_g<G>. Grain 0 is Promptly's grain-less (adaptive) form. The answer is a
// checksum of the output (the sum itself for `sum`).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "algo_common.hpp"

namespace bench {

struct grain_workload {
    std::string kind;
    std::size_t n;
    std::vector<std::size_t> grains;
    std::vector<std::uint32_t> in;   // sum, blur
    std::vector<std::uint64_t> out;  // map, irregular
    std::vector<std::uint32_t> img;  // blur's output

    explicit grain_workload(args& a, bool takes_grains)
        : kind(a.get_string("kind", "sum")), n(std::size_t(a.get_long("n", 10'000'000))) {
        if (kind != "sum" && kind != "map" && kind != "blur" && kind != "irregular")
            args::fail("--kind must be sum, map, blur or irregular");
        if (takes_grains) {
            std::stringstream ss(a.get_string("grains", "0"));
            for (std::string g; std::getline(ss, g, ',');) {
                char* end = nullptr;
                long v = std::strtol(g.c_str(), &end, 10);
                if (g.empty() || *end != '\0' || v < 0) args::fail("--grains needs integers >= 0, comma-separated");
                grains.push_back(std::size_t(v));
            }
        } else {
            grains = {0};
        }
        if (kind == "sum") {
            in.resize(n);
            for (std::size_t i = 0; i < n; ++i) in[i] = std::uint32_t(mix_step(i) % 1000);
        } else if (kind == "blur") {
            if (n < 3) args::fail("--n must be >= 3 for blur");
            in.resize(n * n);
            for (std::size_t i = 0; i < n * n; ++i) in[i] = std::uint32_t(mix_step(i) % 256);
            img.assign(n * n, 0);
        } else {
            out.assign(n, 0);
        }
    }

    // The per-index (per-row-segment) work every program calls.
    std::uint64_t sum_at(std::size_t i) const noexcept { return in[i]; }
    void map_at(std::size_t i) noexcept {
        std::uint64_t z = i;
        for (int r = 0; r < 4; ++r) z = mix_step(z);
        out[i] = z;
    }
    void irregular_at(std::size_t i) noexcept {
        std::uint64_t z = i;
        for (std::size_t r = 0; r < i / 4; ++r) z = mix_step(z);
        out[i] = z;
    }
    // Rows [r0, r1) x columns [c0, c1) of the interior [1, n - 1)^2.
    void blur_tile(std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) noexcept {
        for (std::size_t r = r0; r < r1; ++r) {
            const std::uint32_t* up = &in[(r - 1) * n];
            const std::uint32_t* mid = &in[r * n];
            const std::uint32_t* down = &in[(r + 1) * n];
            std::uint32_t* o = &img[r * n];
            for (std::size_t c = c0; c < c1; ++c)
                o[c] = (up[c - 1] + up[c] + up[c + 1] + mid[c - 1] + mid[c] + mid[c + 1] + down[c - 1] + down[c] +
                        down[c + 1]) / 9;
        }
    }

    // Runs kernel(grain) for every grain, warmup + reps rounds; kernel returns the answer for
    // `sum` and 0 for the others (their answer is the output's checksum).
    template <class Kernel>
    void run(long warmup, long reps, Kernel&& kernel) {
        using clock = std::chrono::steady_clock;
        if (reps < 1) args::fail("--reps must be >= 1");
        std::vector<std::vector<double>> walls(grains.size()), utils(grains.size());
        std::uint64_t answer = 0;
        bool have = false;
        for (long i = 0; i < warmup + reps; ++i) {
            for (std::size_t g = 0; g < grains.size(); ++g) {
                double c0 = cpu_seconds_self();
                auto t0 = clock::now();
                std::uint64_t s = kernel(grains[g]);
                auto t1 = clock::now();
                double c1 = cpu_seconds_self();
                std::uint64_t r = kind == "sum" ? s : kind == "blur" ? checksum_values(img) : checksum_values(out);
                if (have && r != answer) args::fail("answer changed between repetitions or grains");
                answer = r;
                have = true;
                if (i < warmup) continue;
                double wall = std::chrono::duration<double>(t1 - t0).count();
                walls[g].push_back(wall);
                utils[g].push_back(wall > 0 ? (c1 - c0) / wall : 0.0);
            }
        }
        std::size_t best = 0;
        std::vector<std::pair<std::string, double>> extra;
        for (std::size_t g = 0; g < grains.size(); ++g) {
            if (median(walls[g]) < median(walls[best])) best = g;
            if (grains.size() > 1) extra.emplace_back("region_s_g" + std::to_string(grains[g]), median(walls[g]));
        }
        if (grains.size() > 1) extra.emplace_back("best_grain", double(grains[best]));
        region_stats s{median(walls[best]), *std::min_element(walls[best].begin(), walls[best].end()),
                       median(utils[best])};
        print_result(std::to_string(answer), s, extra);
    }
};

}  // namespace bench
