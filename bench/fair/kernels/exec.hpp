// Two executors with one vocabulary, so that each kernel is written once as a template and run
// either in parallel on Promptly (`par`) or as its serial elision (`seq`: every fork becomes a
// plain call, every parallel loop a plain loop, same leaves and same grain). The serial version
// is then exactly the parallel algorithm's work T1 without the runtime, which is the reference
// a stretch (the fairly prompt paper Sec. 6.2.3) is measured against.
//
// Strand length (why the grains matter): the fair policy moves a worker between levels only at
// strand boundaries (spawn, join, future get, promptly::yield), so every leaf of these loops and
// recursions must be short; each kernel picks its grain for <= ~0.1 ms of serial work.
#pragma once

#include <promptly/promptly.hpp>

#include <concepts>
#include <cstddef>
#include <utility>

namespace fair_kernels {

struct seq {
    // Both branches, in order; returns their results.
    template <class F, class G>
    static auto join(F&& f, G&& g) {
        auto a = f();
        return std::pair{std::move(a), g()};
    }
    // body(i) for every i in [first, last).
    template <std::integral I, class Body>
    static void loop(I first, I last, std::size_t /*grain*/, Body&& body) {
        for (I i = first; i < last; ++i) body(i);
    }
    // The sum (T's operator+) of map(i) over [first, last).
    template <class T, std::integral I, class Map>
    static T sum(I first, I last, std::size_t /*grain*/, Map&& map) {
        T acc{};
        for (I i = first; i < last; ++i) acc = acc + map(i);
        return acc;
    }
    static void yield() noexcept {}
};

struct par {
    template <class F, class G>
    static auto join(F&& f, G&& g) {
        return promptly::join(std::forward<F>(f), std::forward<G>(g));
    }
    template <std::integral I, class Body>
    static void loop(I first, I last, std::size_t grain, Body&& body) {
        promptly::parallel_for(first, last, grain, std::forward<Body>(body));
    }
    // Halves [first, last) with join until a piece has <= grain indices (as parallel_for).
    template <class T, std::integral I, class Map>
    static T sum(I first, I last, std::size_t grain, Map&& map) {
        if (grain == 0) grain = 1;
        if (static_cast<std::size_t>(last - first) <= grain) return seq::sum<T>(first, last, grain, map);
        const I mid = first + (last - first) / 2;
        auto [a, b] = promptly::join([&] { return sum<T>(first, mid, grain, map); },
                                     [&] { return sum<T>(mid, last, grain, map); });
        return a + b;
    }
    static void yield() { promptly::yield(); }
};

}  // namespace fair_kernels
