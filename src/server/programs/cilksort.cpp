// cilksort: parallel merge sort of n pseudo-random 64-bit integers (Cilk's
// cilksort): sort the halves in parallel, merge them with a parallel merge
// (split the larger run at its middle, the other by binary search), serial
// below `base`. The result says whether the output is sorted and carries
// the wrapping sum of the values before and after (equal for a permutation).
// Memory: 2 n 8-byte words, at most 128 MiB at the bound n = 2^23.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "promptly/fork_join.hpp"
#include "promptly/parallel.hpp"
#include "programs.hpp"

namespace promptly::server::programs {

namespace {

constexpr std::size_t base = 2048;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void merge(std::span<const std::int64_t> a, std::span<const std::int64_t> b, std::span<std::int64_t> out) {
  if (a.size() < b.size()) std::swap(a, b);
  if (a.size() + b.size() <= base || b.empty()) {
    std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin());
    return;
  }
  const std::size_t ma = a.size() / 2;
  const auto mb = static_cast<std::size_t>(std::lower_bound(b.begin(), b.end(), a[ma]) - b.begin());
  promptly::join([&] { merge(a.first(ma), b.first(mb), out.first(ma + mb)); },
                 [&] { merge(a.subspan(ma), b.subspan(mb), out.subspan(ma + mb)); });
}

void sort_rec(std::span<std::int64_t> v, std::span<std::int64_t> tmp, const job_context& ctx) {
  if (v.size() <= base) {
    ctx.throw_if_cancelled();
    std::sort(v.begin(), v.end());
    return;
  }
  const std::size_t h = v.size() / 2;
  promptly::join([&] { sort_rec(v.first(h), tmp.first(h), ctx); }, [&] { sort_rec(v.subspan(h), tmp.subspan(h), ctx); });
  ctx.throw_if_cancelled();
  merge(v.first(h), v.subspan(h), tmp);
  promptly::parallel_for(promptly::index_range<std::size_t>(0, v.size()), 1 << 16,
                         [&](promptly::index_range<std::size_t> r) {
                           std::copy(tmp.begin() + static_cast<std::ptrdiff_t>(r.first()),
                                     tmp.begin() + static_cast<std::ptrdiff_t>(r.last()),
                                     v.begin() + static_cast<std::ptrdiff_t>(r.first()));
                         });
}

std::uint64_t wrapping_sum(const std::vector<std::int64_t>& v) {
  return promptly::parallel_reduce(
      std::size_t{0}, v.size(), 1 << 16, std::uint64_t{0},
      [&](std::size_t i) { return static_cast<std::uint64_t>(v[i]); }, [](std::uint64_t x, std::uint64_t y) { return x + y; });
}

json run(job_context& ctx) {
  const auto n = ctx.args()["n"].get<std::size_t>();
  const auto seed = ctx.args()["seed"].get<std::uint64_t>();
  std::vector<std::int64_t> v(n), tmp(n);
  promptly::parallel_for(std::size_t{0}, n, 1 << 14,
                         [&](std::size_t i) { v[i] = static_cast<std::int64_t>(splitmix64(seed * 0x100000001b3ULL + i)); });
  const std::uint64_t before = wrapping_sum(v);
  sort_rec(v, tmp, ctx);
  const bool sorted = n < 2 || promptly::parallel_reduce(
                                   std::size_t{1}, n, 1 << 16, true, [&](std::size_t i) { return v[i - 1] <= v[i]; },
                                   [](bool x, bool y) { return x && y; });
  return {{"n", n}, {"sorted", sorted}, {"checksum", wrapping_sum(v)}, {"checksum_before", before}};
}

}  // namespace

void register_cilksort(job_server& srv) {
  srv.register_program(
      "cilksort", run,
      arg_schema{}
          .integer("n", {.min = 0, .max = std::int64_t{1} << 23, .help = "elements to sort (2^23: 128 MiB with the buffer)"})
          .integer("seed", {.min = 0, .max = std::int64_t{1} << 53, .default_value = 1, .help = "seed of the input values"}),
      "parallel merge sort of pseudo-random integers; result: {n, sorted, checksum, checksum_before}");
}

}  // namespace promptly::server::programs
