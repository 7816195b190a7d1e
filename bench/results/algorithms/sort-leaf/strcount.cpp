// Comparisons and element moves of the unstable sorts on the suite's 10^6 strings
// (algo_common.hpp): promptly::parallel_sort on 1 worker, the sequential pdq_sort it runs in its
// pieces, and std::sort. The strings are wrapped in a type that counts its moves and swaps; the
// comparator counts its calls. Output: strings-comparisons-2026-11-28.txt.
//   g++ -std=c++20 -O2 -DNDEBUG -Iinclude -Ibuild/include -Ibench/algorithms -Ibench/common \
//       strcount.cpp build/libpromptly.a -lboost_context -luring -lpthread
#include <promptly/promptly.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include "algo_common.hpp"

static long g_cmp, g_move_construct, g_move_assign, g_swap;

struct counted_string {
    std::string s;
    counted_string() = default;
    explicit counted_string(std::string x) : s(std::move(x)) {}
    counted_string(counted_string&& o) noexcept : s(std::move(o.s)) { ++g_move_construct; }
    counted_string& operator=(counted_string&& o) noexcept { s = std::move(o.s); ++g_move_assign; return *this; }
    counted_string(const counted_string&) = default;
    counted_string& operator=(const counted_string&) = default;
    friend void swap(counted_string& a, counted_string& b) noexcept { ++g_swap; std::swap(a.s, b.s); }
};

struct counting_less {  // noexcept, as std::string's <, so the sort runs unguarded as in the bench
    bool operator()(const counted_string& a, const counted_string& b) const noexcept { ++g_cmp; return a.s < b.s; }
};

template <class F>
void count(const char* name, const std::vector<counted_string>& input, F&& sort) {
    std::vector<counted_string> v = input;
    g_cmp = g_move_construct = g_move_assign = g_swap = 0;
    sort(v);
    const long comparisons = g_cmp;
    if (!std::is_sorted(v.begin(), v.end(), counting_less{})) { std::puts("NOT SORTED"); std::exit(1); }
    std::printf("%-24s comparisons %9ld  move-construct %8ld  move-assign %9ld  swaps %8ld  moves (swap = 3) %9ld\n", name,
                comparisons, g_move_construct, g_move_assign, g_swap, g_move_construct + g_move_assign + 3 * g_swap);
}

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::stoul(argv[1]) : 1000000;
    std::vector<counted_string> input;
    for (auto& s : bench::sort_strings(n)) input.emplace_back(std::move(s));
    promptly::runtime_config cfg;
    cfg.workers = 1;
    promptly::runtime rt{cfg};
    count("promptly::parallel_sort", input, [&](auto& v) { rt.run([&] { promptly::parallel_sort(v, counting_less{}); }); });
    count("detail::pdq_sort", input, [](auto& v) { counting_less l; promptly::detail::pdq_sort(v.begin(), v.end(), l); });
    count("std::sort", input, [](auto& v) { std::sort(v.begin(), v.end(), counting_less{}); });
}
