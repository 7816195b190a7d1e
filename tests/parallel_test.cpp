// Parallel loops (parallel.hpp, index_range.hpp): mixed bound types, bounds at the ends of
// their types, the range form's pieces, parallel_reduce's order and identity, exceptions,
// and calls outside a runtime.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "promptly/promptly.hpp"
#include "test_support.hpp"

namespace {

// Pieces a range-form body received, checked for a partition afterwards.
struct piece_log {
  std::mutex m;
  std::vector<std::pair<long long, long long>> pieces;
  void add(long long first, long long last) {
    std::lock_guard<std::mutex> lock(m);
    pieces.emplace_back(first, last);
  }
  // True if the pieces, sorted, tile [first, last) exactly.
  bool tile(long long first, long long last) {
    std::sort(pieces.begin(), pieces.end());
    long long at = first;
    for (auto [a, b] : pieces) {
      if (a != at || b <= a) return false;
      at = b;
    }
    return at == last;
  }
};

// A value type with no default constructor: parallel_reduce must not need one.
struct tally {
  explicit tally(long v) : value(v) {}
  long value;
};

}  // namespace

static_assert(std::forward_iterator<promptly::index_iterator<int>>);
static_assert(std::is_same_v<decltype(promptly::index_range(0, std::size_t{3})), promptly::index_range<std::size_t>>);

class Parallel : public ::testing::TestWithParam<unsigned> {
 protected:
  static promptly::runtime_config with_workers(unsigned n) {
    promptly::runtime_config c;
    c.workers = n;
    return c;
  }
  promptly::runtime rt{with_workers(GetParam())};
};

TEST_P(Parallel, MixedBoundTypesMeetInTheirCommonType) {
  std::vector<int> v(1'003, 0);
  rt.run([&] {
    // int and std::size_t: the index is std::size_t.
    promptly::parallel_for(0, v.size(), 7, [&](auto i) {
      static_assert(std::is_same_v<decltype(i), std::size_t>);
      v[i]++;
    });
  });
  for (int x : v) ASSERT_EQ(x, 1);
  long long sum = rt.run([&] {
    return promptly::parallel_reduce(short{-5}, 10LL, 1, 0LL, [](long long i) { return i; }, std::plus<>{});
  });
  EXPECT_EQ(sum, 30);  // -5 + -4 + ... + 9
}

TEST_P(Parallel, ABoundTheIndexTypeCannotHoldThrows) {
  const std::size_t n = 10;
  const std::string what = what_of<std::out_of_range>([&] {
    rt.run([&] { promptly::parallel_for(-1, n, 1, [](std::size_t) { ADD_FAILURE() << "ran"; }); });
  });
  EXPECT_NE(what.find("`first` = -1"), std::string::npos) << what;
  EXPECT_THROW((void)promptly::parallel_reduce(-3, 4u, 1, 0u, [](unsigned i) { return i; }, std::plus<>{}),
               std::out_of_range);
  EXPECT_THROW((promptly::index_range(0u, -2)), std::out_of_range);
}

TEST_P(Parallel, VisitsEveryIndexOnceForEveryGrain) {
  for (std::size_t grain : {0, 1, 2, 3, 64, 5'000, 100'000}) {
    std::vector<std::atomic<int>> seen(4'099);
    rt.run([&] { promptly::parallel_for(0, 4'099, grain, [&](int i) { seen[static_cast<std::size_t>(i)]++; }); });
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "grain " << grain << " index " << i;
  }
}

TEST_P(Parallel, EmptyAndReversedRangesRunNothing) {
  rt.run([] {
    promptly::parallel_for(5, 5, 1, [](int) { ADD_FAILURE() << "empty range ran"; });
    promptly::parallel_for(9, 2, 1, [](int) { ADD_FAILURE() << "reversed range ran"; });
    promptly::parallel_for(promptly::index_range(9, 2), 1, [](auto) { ADD_FAILURE() << "reversed range ran"; });
  });
  EXPECT_TRUE(promptly::index_range(9, 2).empty());
  EXPECT_EQ(promptly::index_range(9, 2).size(), 0u);
  const std::string r = rt.run([] {
    return promptly::parallel_reduce(3, 3, 1, std::string("identity"), [](int) { return std::string("x"); },
                                     std::plus<>{});
  });
  EXPECT_EQ(r, "identity");
}

TEST_P(Parallel, BoundsAtTheEndsOfTheirTypes) {
  // Every int8 value once: the count (255 + 1) does not fit the signed type.
  std::vector<std::atomic<int>> seen(256);
  rt.run([&] {
    promptly::parallel_for(std::int8_t{-128}, std::int8_t{127}, 3, [&](std::int8_t i) { seen[static_cast<std::size_t>(i + 128)]++; });
  });
  for (std::size_t i = 0; i < 255; ++i) ASSERT_EQ(seen[i].load(), 1) << i;
  EXPECT_EQ(seen[255].load(), 0);  // last is excluded
  // [INT_MIN, INT_MAX) holds 2^32 - 1 indices: splitting it must not overflow (UBSan checks
  // this in the sanitizer build); pieces of 2^28 keep the test fast.
  std::atomic<std::uint64_t> covered{0};
  piece_log log;
  rt.run([&] {
    promptly::parallel_for(promptly::index_range(INT_MIN, INT_MAX), std::size_t{1} << 28, [&](promptly::index_range<int> r) {
      covered += r.size();
      log.add(r.first(), r.last());
    });
  });
  EXPECT_EQ(covered.load(), (std::uint64_t{1} << 32) - 1);
  EXPECT_TRUE(log.tile(INT_MIN, INT_MAX));
  // Near the top of an unsigned type.
  const auto top = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t s = rt.run([&] {
    return promptly::parallel_reduce(top - 100, top, 4, std::uint64_t{0},
                                     [](std::uint64_t i) { return std::numeric_limits<std::uint64_t>::max() - i; },
                                     std::plus<>{});
  });
  EXPECT_EQ(s, 100u * 101u / 2u);  // (top - i) runs over 1..100
}

TEST_P(Parallel, RangeFormPiecesTileTheRangeAndRespectTheGrain) {
  for (std::size_t grain : {1, 5, 16, 1'000, 10'000}) {
    piece_log log;
    const long first = -37, last = 2'011;
    rt.run([&] {
      promptly::parallel_for(promptly::index_range(first, last), grain, [&](promptly::index_range<long> r) {
        long n = 0;
        for (long i : r) {
          EXPECT_GE(i, r.first());
          ++n;
        }
        EXPECT_EQ(static_cast<std::size_t>(n), r.size());
        log.add(r.first(), r.last());
      });
    });
    const auto total = static_cast<std::size_t>(last - first);
    for (auto [a, b] : log.pieces) {
      const auto size = static_cast<std::size_t>(b - a);
      EXPECT_LE(size, grain) << "grain " << grain;
      if (total > grain) EXPECT_GE(2 * size + 1, grain) << "halving never leaves a piece below grain / 2";
    }
    EXPECT_TRUE(log.tile(first, last)) << "grain " << grain;
  }
}

TEST_P(Parallel, ReduceSumsAndKeepsIndexOrder) {
  const std::size_t n = scaled(1'000'000, 10);
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>(i * 2654435761u);
  std::uint64_t want = 0;
  for (auto x : v) want += x;
  const std::uint64_t got = rt.run([&] {
    return promptly::parallel_reduce(0, v.size(), 1'000, std::uint64_t{0}, [&](std::size_t i) { return v[i]; },
                                     std::plus<>{});
  });
  EXPECT_EQ(got, want);
  // Concatenation is associative but not commutative: any reordering of pieces shows.
  std::string serial;
  for (int i = 0; i < 3'000; ++i) serial += static_cast<char>('a' + i % 26);
  const std::string joined = rt.run([] {
    return promptly::parallel_reduce(
        0, 3'000, 7, std::string(), [](int i) { return std::string(1, static_cast<char>('a' + i % 26)); },
        [](std::string a, const std::string& b) { return std::move(a) + b; });
  });
  EXPECT_EQ(joined, serial);
}

TEST_P(Parallel, ReduceNeedsNoDefaultConstructorAndCopiesTheIdentityPerPiece) {
  // Identity 0 per piece: a reduction that counted the identity once per piece would show.
  const tally t = rt.run([] {
    return promptly::parallel_reduce(0, 1'000, 10, tally(0), [](int i) { return tally(i); },
                                     [](tally a, tally b) { return tally(a.value + b.value); });
  });
  EXPECT_EQ(t.value, 999 * 1'000 / 2);
  // A non-neutral "identity" is added once per piece: 100 pieces of 10.
  const long pieces = rt.run([] {
    return promptly::parallel_reduce(0, 1'000, 10, 1L, [](int) { return 0L; }, std::plus<>{});
  });
  EXPECT_EQ(pieces, 128);  // halving 1000 down to <= 10 gives 2^7 pieces (7 or 8 indices each)
}

TEST_P(Parallel, TheFirstExceptionSkipsThePiecesNotStartedAndPropagates) {
  std::atomic<int> ran{0};
  std::string what;
  try {
    rt.run([&] {
      promptly::parallel_for(0, 1'000, 10, [&](int i) {
        ran++;
        if (i == 900) throw std::runtime_error("right");
        if (i == 15) throw std::runtime_error("left");
      });
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  if (rt.workers() == 1) {
    // One worker runs the pieces left to right: [0, 10), then [10, 20) throws at 15 and every
    // later piece is skipped.
    EXPECT_EQ(what, "left");
    EXPECT_EQ(ran.load(), 16);
  } else {
    EXPECT_TRUE(what == "left" || what == "right") << what;
    EXPECT_LT(ran.load(), 1'000);  // the throwing piece stopped its own loop at least
  }
  EXPECT_THROW((void)rt.run([] {
    return promptly::parallel_reduce(0, 100, 1, 0, [](int i) {
      if (i == 50) throw std::logic_error("map");
      return i;
    }, std::plus<>{});
  }),
               std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(Workers, Parallel, ::testing::Values(1u, 2u, 4u));

TEST(ParallelOutsideRuntime, RunsSequentiallyInASequentialRegion) {
  promptly::sequential_region seq;  // else the default runtime runs them (default_runtime.hpp)
  std::vector<int> order;
  promptly::parallel_for(0, 10, 2, [&](int i) { order.push_back(i); });  // no data race: sequential
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(promptly::parallel_reduce(1, 11, 3, 1L, [](int i) { return static_cast<long>(i); }, std::multiplies<>{}),
            3'628'800L);
}

TEST(ParallelDocs, Example) {  // docs/parallel-loops.md, first example
  promptly::runtime rt;
  const double sum = rt.run([] {
    std::vector<double> v(1'000'000, 1.5);
    promptly::parallel_for(0, v.size(), 4096, [&](std::size_t i) { v[i] *= 2; });
    promptly::parallel_for(promptly::index_range(0, v.size()), 4096, [&](promptly::index_range<std::size_t> r) {
      for (std::size_t i : r) v[i] += 1;
    });
    return promptly::parallel_reduce(0, v.size(), 4096, 0.0, [&](std::size_t i) { return v[i]; }, std::plus<>{});
  });
  EXPECT_EQ(sum, 4'000'000.0);  // every term is 4.0: exact in any order
}
