// The key-prefix path of parallel_sort against the in-place pattern-defeating quicksort on the
// same strings (a noexcept comparator lambda equal to std::ranges::less takes the in-place
// path), per input shape, alternated, median of 5 (ms, wall, each sort one runtime::run()).
// Build and run: see README.md.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "promptly/promptly.hpp"

static std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// shape: letters (the suite's: 8-24 random letters), url (one shared 24-byte prefix, then
// letters), mixed (half the strings share a 24-byte prefix, half do not), tenth (one in ten
// does), few (100 distinct).
static std::vector<std::string> make(const std::string& shape, std::size_t n) {
  std::vector<std::string> v(n);
  const std::string shared = "https://www.example.org/";
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t id = shape == "few" ? mix(i) % 100 : i;
    const bool with_shared = shape == "url" || (shape == "mixed" && mix(i + 7) % 2 == 0) || (shape == "tenth" && mix(i + 7) % 10 == 0);
    std::string s = with_shared ? shared : "";
    for (std::uint64_t j = 0, len = 8 + mix(id) % 17; j < len; ++j) s.push_back(char('a' + mix(id * 64 + j + 1) % 26));
    v[i] = std::move(s);
  }
  return v;
}

int main(int argc, char** argv) {
  const std::string shape = argc > 1 ? argv[1] : "letters";
  const std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1'000'000;
  const unsigned workers = argc > 3 ? unsigned(std::atoi(argv[3])) : 1;
  promptly::runtime_config cfg;
  cfg.workers = workers;
  promptly::runtime rt(cfg);
  const auto input = make(shape, n);
  std::vector<double> keyed, in_place;
  std::vector<std::string> v;
  for (int r = 0; r < 5; ++r) {
    for (int path = 0; path < 2; ++path) {
      v = input;  // the suite's setup: copied into the last output
      const auto t0 = std::chrono::steady_clock::now();
      rt.run([&] {
        if (path == 0)
          promptly::parallel_sort(v);
        else
          promptly::parallel_sort(v, [](const std::string& a, const std::string& b) noexcept { return a < b; });
      });
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!std::is_sorted(v.begin(), v.end())) return std::puts("not sorted"), 1;
      (path == 0 ? keyed : in_place).push_back(ms);
    }
  }
  std::ranges::sort(keyed);
  std::ranges::sort(in_place);
  std::printf("%-8s n=%zu w=%u  key-prefix %.1f ms (%.1f-%.1f)  in-place %.1f ms (%.1f-%.1f)  ratio %.2f\n", shape.c_str(), n,
              workers, keyed[2], keyed[0], keyed[4], in_place[2], in_place[0], in_place[4], keyed[2] / in_place[2]);
}
