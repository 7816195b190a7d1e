// Sort (the fairly prompt paper Sec. 6.2.2): sample sort after Blelloch et al. 2010, of n random 64-bit keys
// into a separate output array (the input stays as prepared, so every run repeats the work).
// Memory-intensive with a predictable structure. Steps, each a parallel loop:
//   1. gather a sample (oversample x buckets keys at fixed positions), sort it, take splitters;
//   2. per block of the input: each key's bucket (branch-free search), per-bucket counts;
//   3. per group of 16 buckets (one cache line of a count row): the column scan giving each
//      (block, bucket) its offset in the output; a serial scan of the 1024 bucket totals;
//   4. per block: scatter the keys to their buckets;
//   5. per bucket: a parallel quicksort (std::sort below 2048 keys).
// Checksum: sum over i of mix(out[i] + i), computed with a check that out is sorted (a
// violation throws). The serial reference also checks that out is a permutation of the input.
// Strands: blocks hold 32k keys, so loops 2 and 4 and the partition loop call yield() every
// 4096 keys (~0.05 ms); std::sort leaves hold <= 2048 keys (~0.1 ms).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <stdexcept>
#include <vector>

#include "exec.hpp"
#include "kernel.hpp"

namespace fair_kernels {

class sort_kernel final : public kernel {
public:
    explicit sort_kernel(scale s)
        : n_(pick<std::size_t>(s, 1u << 16, 1u << 22, 1u << 25)), blocks_((n_ + block - 1) / block), in_(n_),
          out_(n_), bucket_of_(n_), counts_(blocks_ * buckets), sample_(buckets * oversample) {
        for (std::size_t i = 0; i < n_; ++i) in_[i] = mix(0x5000'0000ull + i);
        for (std::size_t k = 0; k < sample_.size(); ++k) sample_[k] = mix(0x6000'0000ull + k) % n_;
    }

    std::string_view name() const noexcept override { return "sort"; }
    std::uint64_t run() override { return sort<par>(); }
    std::uint64_t run_serial() override {
        const std::uint64_t h = sort<seq>();
        if (std::exchange(checked_, true)) return h;  // once: the timed serial runs only sort
        std::uint64_t a = 0, b = 0;  // same multiset: an order-independent hash of both arrays
        for (std::size_t i = 0; i < n_; ++i) a += mix(in_[i]), b += mix(out_[i]);
        if (a != b) throw std::logic_error("sort: the serial output is not a permutation of the input");
        return h;
    }

private:
    static constexpr std::size_t buckets = 1024;  // a power of two (branch-free search)
    static constexpr std::size_t oversample = 16;
    static constexpr std::size_t block = 1 << 15;  // keys per block of steps 2 and 4
    static constexpr std::size_t yield_every = 4096;
    static constexpr std::size_t leaf = 2048;  // quicksort: std::sort below this

    using key = std::uint64_t;

    template <class E>
    static void quicksort(key* first, key* last) {
        if (std::size_t(last - first) <= leaf) return std::sort(first, last);
        const key x = first[0], y = first[(last - first) / 2], z = last[-1];
        const key p = std::max(std::min(x, y), std::min(std::max(x, y), z));  // median of three
        // Dijkstra's three-way partition, [first, lt) < p, [lt, gt) == p, [gt, last) > p, with a
        // strand boundary every `yield_every` steps (a bucket holds ~32k keys at full scale).
        key *lt = first, *i = first, *gt = last;
        for (std::size_t steps = 1; i < gt; ++steps) {
            if (*i < p) std::swap(*lt++, *i++);
            else if (p < *i) std::swap(*i, *--gt);
            else ++i;
            if (steps % yield_every == 0) E::yield();
        }
        E::join([=] { quicksort<E>(first, lt); return 0; }, [=] { quicksort<E>(gt, last); return 0; });
    }

    // The largest b with splitter[b] <= k (splitter[0] = 0): k's bucket.
    std::size_t bucket(key k) const {
        std::size_t b = 0;
        for (std::size_t step = buckets / 2; step > 0; step /= 2) b += splitter_[b + step] <= k ? step : 0;
        return b;
    }

    template <class E>
    std::uint64_t sort() {
        // 1. splitters from a sorted sample
        std::vector<key> sample(sample_.size());
        E::loop(std::size_t{0}, sample.size(), 4096, [&](std::size_t k) { sample[k] = in_[sample_[k]]; });
        quicksort<E>(sample.data(), sample.data() + sample.size());
        splitter_[0] = 0;
        for (std::size_t b = 1; b < buckets; ++b) splitter_[b] = sample[b * oversample];
        // 2. buckets and per-block counts
        E::loop(std::size_t{0}, blocks_, 1, [&](std::size_t blk) {
            std::uint32_t* count = &counts_[blk * buckets];
            std::fill(count, count + buckets, 0);
            for (std::size_t i = blk * block, end = std::min(n_, i + block); i < end; ++i) {
                const std::size_t b = bucket(in_[i]);
                bucket_of_[i] = std::uint16_t(b);
                ++count[b];
                if (i % yield_every == 0) E::yield();
            }
        });
        // 3. offsets: counts_ becomes each (block, bucket)'s exclusive prefix within its bucket
        std::vector<std::uint64_t> start(buckets + 1, 0);
        E::loop(std::size_t{0}, buckets / 16, 1, [&](std::size_t g) {
            std::array<std::uint32_t, 16> run{};
            for (std::size_t blk = 0; blk < blocks_; ++blk)
                for (std::size_t j = 0; j < 16; ++j) {
                    std::uint32_t& c = counts_[blk * buckets + g * 16 + j];
                    run[j] += std::exchange(c, run[j]);
                }
            for (std::size_t j = 0; j < 16; ++j) start[g * 16 + j + 1] = run[j];
        });
        for (std::size_t b = 0; b < buckets; ++b) start[b + 1] += start[b];
        // 4. scatter
        E::loop(std::size_t{0}, blocks_, 1, [&](std::size_t blk) {
            std::vector<std::uint64_t> pos(buckets);
            for (std::size_t b = 0; b < buckets; ++b) pos[b] = start[b] + counts_[blk * buckets + b];
            for (std::size_t i = blk * block, end = std::min(n_, i + block); i < end; ++i) {
                out_[pos[bucket_of_[i]]++] = in_[i];
                if (i % yield_every == 0) E::yield();
            }
        });
        // 5. sort the buckets
        E::loop(std::size_t{0}, buckets, 1, [&](std::size_t b) { quicksort<E>(&out_[start[b]], &out_[start[b + 1]]); });
        // checksum, checking sortedness
        constexpr std::size_t piece = 8192;
        return E::template sum<std::uint64_t>(std::size_t{0}, n_ / piece + 1, 1, [&](std::size_t c) {
            std::uint64_t h = 0;
            for (std::size_t i = c * piece, end = std::min(n_, i + piece); i < end; ++i) {
                if (i > 0 && out_[i - 1] > out_[i]) throw std::logic_error("sort: output not sorted");
                h += mix(out_[i] + i);
            }
            return h;
        });
    }

    std::size_t n_, blocks_;
    std::vector<key> in_, out_;
    std::vector<std::uint16_t> bucket_of_;
    std::vector<std::uint32_t> counts_;   // blocks_ x buckets, row-major
    std::vector<std::size_t> sample_;     // positions of the sample in in_
    std::array<key, buckets> splitter_{};
    bool checked_ = false;
};

}  // namespace fair_kernels
