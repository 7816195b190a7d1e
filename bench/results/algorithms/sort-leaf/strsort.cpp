// Which part of the string-sort gap is the string type: the same 10^6 strings sorted as
// std::string, as std::string_view into one buffer (16 bytes, never inline) and as a
// Rust-String-like (pointer, length, capacity) record, by promptly::parallel_sort on 1 worker
// and by std::sort. CPU-time-light: each variant's median of 5 sorts.
#include <promptly/promptly.hpp>
#include <algorithm>
#include <compare>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>
#include "algo_common.hpp"

struct heap_string {  // Rust's String layout: always on the heap, compared by memcmp then length
    char* ptr; std::size_t len; std::size_t cap;
    friend std::weak_ordering operator<=>(const heap_string& a, const heap_string& b) {
        int c = std::memcmp(a.ptr, b.ptr, std::min(a.len, b.len));
        return c != 0 ? (c < 0 ? std::weak_ordering::less : std::weak_ordering::greater) : a.len <=> b.len;
    }
    friend bool operator==(const heap_string& a, const heap_string& b) { return (a <=> b) == 0; }
};

template <class V, class F>
double median_ms(const V& input, F&& sort) {
    std::vector<double> t;
    for (int r = 0; r < 6; ++r) {
        V v = input;
        auto s = std::chrono::steady_clock::now();
        sort(v);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
        if (!std::is_sorted(v.begin(), v.end())) { std::puts("NOT SORTED"); std::exit(1); }
        if (r > 0) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char** argv) {
    std::size_t n = argc > 1 ? std::stoul(argv[1]) : 1000000;
    auto strs = bench::sort_strings(n);
    std::vector<std::string_view> views(strs.begin(), strs.end());
    std::vector<heap_string> heaps;
    for (auto& s : strs) { char* p = new char[s.size()]; std::memcpy(p, s.data(), s.size()); heaps.push_back({p, s.size(), s.size()}); }
    promptly::runtime_config cfg; cfg.workers = 1;
    promptly::runtime rt{cfg};
    auto ps = [&](auto& v) { rt.run([&] { promptly::parallel_sort(v); }); };
    auto ss = [&](auto& v) { std::sort(v.begin(), v.end()); };
    std::printf("type            promptly_ms std_sort_ms\n");
    std::printf("std::string     %8.1f %8.1f\n", median_ms(strs, ps), median_ms(strs, ss));
    std::printf("string_view     %8.1f %8.1f\n", median_ms(views, ps), median_ms(views, ss));
    std::printf("heap_string     %8.1f %8.1f\n", median_ms(heaps, ps), median_ms(heaps, ss));
}
