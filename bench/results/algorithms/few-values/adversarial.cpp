#include <promptly/promptly.hpp>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
#include <algorithm>
int main(int argc, char** argv) {
  promptly::runtime_config cfg; cfg.workers = argc > 1 ? atoi(argv[1]) : 2;
  promptly::runtime rt{cfg};
  std::size_t n = 100000000;
  std::vector<std::uint32_t> in(n);
  std::mt19937 g(1);
  int mode = argc > 2 ? atoi(argv[2]) : 0;
  for (auto& x : in) x = g() % 16;
  if (mode == 0) in.back() = 1000;
  if (mode == 1) for (std::size_t i = 1; i < n; i += 100000) in[i] = 1000 + i;  // rare, all distinct, never sampled (odd places)
  if (mode == 2) for (std::size_t i = 1; i < n; i += 1000) in[i] = 1000 + g();  // 0.1% of many values
  std::vector<std::uint32_t> v;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 2; ++k) {
      v = in;
      auto t0 = std::chrono::steady_clock::now();
      if (k == 0) rt.run([&] { promptly::parallel_sort(v); });
      else rt.run([&] { promptly::parallel_sort(v, [](std::uint32_t a, std::uint32_t b) noexcept { return a < b; }); });
      auto t1 = std::chrono::steady_clock::now();
      printf("%s %.3f s\n", k == 0 ? "std-less (counting tried)" : "lambda (quicksort only)", std::chrono::duration<double>(t1 - t0).count());
    }
  }
}
