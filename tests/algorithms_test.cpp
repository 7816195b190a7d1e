// Parallel algorithms (sort.hpp, scan.hpp, invoke.hpp, the multidimensional parallel_for):
// results against std:: on random inputs at the sizes around each cutoff, stability,
// projections, throwing comparators (the range stays a permutation), the caller's level kept by
// every piece, calls outside a runtime (the default runtime, its start-up and its shutdown at
// exit, and the sequential_region opt-out).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "promptly/promptly.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

extern char** environ;

namespace {

// Sizes scale down in the sanitizer builds (10x slower or more).
std::size_t big(std::size_t n) { return under_tsan || under_asan ? n / 10 : n; }

// organ_pipe rises then falls, sawtooth is ascending runs, nearly_sorted has a few swaps,
// descending_dups is non-strictly descending (few keys, reversed).
enum class shape { uniform, sorted, reversed, few_unique, equal, organ_pipe, sawtooth, nearly_sorted, descending_dups };

std::vector<std::uint32_t> make_input(std::size_t n, shape s, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = static_cast<std::uint32_t>(gen());
  switch (s) {
    case shape::uniform:
      break;
    case shape::sorted:
      std::sort(v.begin(), v.end());
      break;
    case shape::reversed:
      std::sort(v.begin(), v.end(), std::greater<>{});
      break;
    case shape::few_unique:
      for (auto& x : v) x %= 7;
      break;
    case shape::equal:
      std::fill(v.begin(), v.end(), 42u);
      break;
    case shape::organ_pipe:
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>(std::min(i, n - 1 - i));
      break;
    case shape::sawtooth:
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint32_t>(i % 1000);
      break;
    case shape::nearly_sorted:
      std::sort(v.begin(), v.end());
      for (std::size_t k = 0; n > 1 && k < 1 + n / 1000; ++k) std::swap(v[gen() % n], v[gen() % n]);
      break;
    case shape::descending_dups:
      for (auto& x : v) x %= 7;
      std::sort(v.begin(), v.end(), std::greater<>{});
      break;
  }
  return v;
}

constexpr std::array all_shapes{shape::uniform,    shape::sorted,   shape::reversed,      shape::few_unique,     shape::equal,
                                shape::organ_pipe, shape::sawtooth, shape::nearly_sorted, shape::descending_dups};

// Every size at which the algorithms change course: empty, one, both sides of the sequential
// cutoffs, a few leaves, many leaves.
std::vector<std::size_t> edge_sizes() {
  const auto leaf = static_cast<std::size_t>(promptly::detail::sort_leaf);
  const auto merge = static_cast<std::size_t>(promptly::detail::merge_leaf);
  return {0, 1, 2, 9, leaf - 1, leaf, leaf + 1, merge - 1, merge + 1, 3 * merge + 7, big(200'000)};
}

// A key with its original position: stability is visible.
struct keyed {
  std::uint32_t key;
  std::uint32_t pos;
  friend bool operator==(const keyed&, const keyed&) = default;
};

std::vector<keyed> make_keyed(std::size_t n, std::uint32_t modulus, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<keyed> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = {static_cast<std::uint32_t>(gen() % modulus), static_cast<std::uint32_t>(i)};
  return v;
}

// A comparator that throws at its `limit`-th call (counted over all threads).
struct throwing_less {
  std::atomic<long>* calls;
  long limit;
  bool operator()(std::uint32_t a, std::uint32_t b) const {
    if (calls->fetch_add(1, std::memory_order_relaxed) == limit) throw std::runtime_error("comparator");
    return a < b;
  }
};

}  // namespace

class Algorithms : public ::testing::TestWithParam<unsigned> {
 protected:
  static promptly::runtime_config with_workers(unsigned n) {
    promptly::runtime_config c;
    c.workers = n;
    return c;
  }
  promptly::runtime rt{with_workers(GetParam())};
};

// ---- sorting ----

TEST_P(Algorithms, SortMatchesStdSortForEveryShapeAndSize) {
  for (shape s : all_shapes) {
    for (std::size_t n : edge_sizes()) {
      auto v = make_input(n, s, static_cast<std::uint32_t>(n));
      auto expected = v;
      std::sort(expected.begin(), expected.end());
      rt.run([&] { promptly::parallel_sort(v.begin(), v.end()); });
      ASSERT_EQ(v, expected) << "shape " << static_cast<int>(s) << ", n " << n;
    }
  }
}

// The sequential pattern-defeating quicksort (parallel_sort's pieces) at every size around its
// cutoffs (insertion sort, ninther, block partition), on keys and on strings (whose moves are
// not trivial).
TEST(SequentialSort, MatchesStdSortForEveryShapeAndSmallSize) {
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 300; ++n) sizes.push_back(n);
  for (std::size_t n : {511u, 1000u, 4097u, 20'000u}) sizes.push_back(n);
  std::ranges::less less;
  for (shape s : all_shapes) {
    for (std::size_t n : sizes) {
      auto v = make_input(n, s, static_cast<std::uint32_t>(n + 1));
      auto expected = v;
      std::sort(expected.begin(), expected.end());
      auto strings = std::vector<std::string>(v.size());
      std::ranges::transform(v, strings.begin(), [](std::uint32_t x) { return std::to_string(x); });
      auto expected_strings = strings;
      std::sort(expected_strings.begin(), expected_strings.end());
      promptly::detail::pdq_sort(v.begin(), v.end(), less);
      ASSERT_EQ(v, expected) << "shape " << static_cast<int>(s) << ", n " << n;
      promptly::detail::pdq_sort(strings.begin(), strings.end(), less);
      ASSERT_EQ(strings, expected_strings) << "shape " << static_cast<int>(s) << ", n " << n;
    }
  }
}

// The one-pass check-and-reverse of a descending range, at sizes around its chunks (an odd and
// an even number of them meet in the middle differently), with the order broken by an equal
// pair or an ascending pair at every position: only a strictly descending range is reported
// reversed (and is then ascending); any other is left a permutation of its input. A break where
// a checked end meets the unchecked middle is found only through the mirror-swapped elements.
TEST(SequentialSort, ReverseIfDescendingReversesOnlyStrictlyDescendingRanges) {
  namespace pdq = promptly::detail::pdq;
  const auto c = static_cast<std::size_t>(pdq::scan_chunk);
  std::ranges::less less;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, 2 * c - 1, 2 * c, 2 * c + 1, 4 * c, 4 * c + 1, 5 * c + 3, 6 * c}) {
    std::vector<std::uint32_t> descending(n);
    for (std::size_t i = 0; i < n; ++i) descending[i] = static_cast<std::uint32_t>(2 * (n - i));
    auto v = descending;
    ASSERT_TRUE(pdq::reverse_if_descending<false>(v.begin(), v.end(), less)) << "n " << n;
    ASSERT_TRUE(std::ranges::is_sorted(v)) << "n " << n;
    for (std::size_t k = 1; k < n; ++k) {
      for (std::uint32_t step : {0u, 1u}) {  // the pair (k - 1, k) made equal, or ascending
        auto broken = descending;
        broken[k] = broken[k - 1] + step;
        auto w = broken;
        ASSERT_FALSE(pdq::reverse_if_descending<false>(w.begin(), w.end(), less)) << "n " << n << ", break at " << k;
        std::ranges::sort(w);
        std::ranges::sort(broken);
        ASSERT_EQ(w, broken) << "n " << n << ", break at " << k;
      }
    }
  }
}

// The presorted checks forked in pieces: a range of just over two pieces' worth of front
// positions splits once, and the pairs across the split (front and mirrored back) are checked
// before either piece swaps. Breaks at the split, the centre, the ends and chunk edges are each
// found; unbroken ranges are reported sorted or reversed.
TEST_P(Algorithms, PresortedChecksInPiecesFindABreakAtEverySeam) {
  namespace pdq = promptly::detail::pdq;
  const auto piece = static_cast<std::size_t>(pdq::scan_piece);
  const auto c = static_cast<std::size_t>(pdq::scan_chunk);
  std::ranges::less less;
  for (std::size_t n : {4 * piece + 2, 4 * piece + 3}) {
    const std::size_t m = n / 2;
    std::vector<std::uint32_t> ascending(n);
    std::iota(ascending.begin(), ascending.end(), 0u);
    std::vector<std::uint32_t> descending(ascending.rbegin(), ascending.rend());
    std::vector<std::size_t> breaks;
    for (std::size_t at : {std::size_t{1}, c, piece, m, n - piece, n - c, n - 1})
      for (std::size_t k : {at - 1, at, at + 1})
        if (k >= 1 && k < n) breaks.push_back(k);
    rt.run([&] {
      auto v = descending;
      EXPECT_TRUE(pdq::reverse_if_descending<true>(v.begin(), v.end(), less)) << "n " << n;
      EXPECT_EQ(v, ascending) << "n " << n;
      EXPECT_TRUE(pdq::is_sorted_range<true>(ascending.begin(), ascending.end(), less)) << "n " << n;
      for (std::size_t k : breaks) {
        auto broken = descending;
        broken[k] = broken[k - 1];
        auto w = broken;
        EXPECT_FALSE(pdq::reverse_if_descending<true>(w.begin(), w.end(), less)) << "n " << n << ", break at " << k;
        std::ranges::sort(w);
        std::ranges::sort(broken);
        EXPECT_EQ(w, broken) << "n " << n << ", break at " << k;
        auto unsorted = ascending;
        std::swap(unsorted[k - 1], unsorted[k]);
        EXPECT_FALSE(pdq::is_sorted_range<true>(unsorted.begin(), unsorted.end(), less)) << "n " << n << ", break at " << k;
      }
    });
  }
}

namespace {

// Sizes up to a few blocks of the block partition, and around larger multiples of a block. The
// sanitizer builds take the sizes within 2 of a multiple of a block (where the last round's
// blocks change shape), the smallest ones and a stride of the rest.
std::vector<std::size_t> block_partition_sizes() {
  const auto b = static_cast<std::size_t>(promptly::detail::pdq::block_size);
  const bool every = !(under_tsan || under_asan);
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 4 * b + 3; ++n)
    if (every || n < 16 || (n + 2) % b < 5 || n % 17 == 0) sizes.push_back(n);
  for (std::size_t n : {8 * b - 1, 8 * b, 8 * b + 1, 1000 * b / 64 + 7}) sizes.push_back(n);
  return sizes;
}

}  // namespace

// The block partition alone, on every shape, at every size up to four blocks (the last round
// sizes its blocks to what is left) and around larger multiples, with pivots below, above and
// among the keys: it returns the boundary of a partition of a permutation of its input, and
// reports no swap for a range that was already partitioned.
TEST(SequentialSort, BlockPartitionSplitsEveryRangeAroundItsPivot) {
  namespace pdq = promptly::detail::pdq;
  for (shape s : all_shapes) {
    for (std::size_t n : block_partition_sizes()) {
      const auto v = make_input(n, s, static_cast<std::uint32_t>(n + 3));
      auto sorted_v = v;
      std::sort(sorted_v.begin(), sorted_v.end());
      for (std::uint32_t pivot : {0u, 0xffffffffu, n > 0 ? v[n / 2] : 1u, 3u}) {
        auto w = v;
        bool swapped = false;
        auto goes_left = [pivot](std::uint32_t x) { return x < pivot; };
        const auto mid = pdq::block_partition_range(w.begin(), w.end(), goes_left, swapped);
        ASSERT_TRUE(std::all_of(w.begin(), mid, goes_left)) << "shape " << static_cast<int>(s) << ", n " << n << ", pivot " << pivot;
        ASSERT_TRUE(std::none_of(mid, w.end(), goes_left)) << "shape " << static_cast<int>(s) << ", n " << n << ", pivot " << pivot;
        if (std::is_partitioned(v.begin(), v.end(), goes_left)) EXPECT_FALSE(swapped) << "n " << n << ", pivot " << pivot;
        std::sort(w.begin(), w.end());
        ASSERT_EQ(w, sorted_v) << "not a permutation: shape " << static_cast<int>(s) << ", n " << n;
      }
    }
  }
}

// A guarded comparison answers false for everything once the sort is stopped (an exception
// elsewhere, a stop request): the block partition then stays inside its range and leaves a
// permutation, whenever the answers change (ASan checks the bounds).
TEST(SequentialSort, BlockPartitionStaysInBoundsWhenItsComparisonStopsAnswering) {
  namespace pdq = promptly::detail::pdq;
  for (std::size_t n : block_partition_sizes()) {
    const auto v = make_input(n, shape::uniform, static_cast<std::uint32_t>(n + 5));
    auto sorted_v = v;
    std::sort(sorted_v.begin(), sorted_v.end());
    const std::uint32_t pivot = n > 0 ? v[n / 2] : 0u;
    for (std::size_t answered : {std::size_t{0}, std::size_t{1}, n / 3, n - n / 4}) {
      auto w = v;
      bool swapped = false;
      std::size_t calls = 0;
      auto goes_left = [&](std::uint32_t x) { return calls++ < answered && x < pivot; };
      const auto mid = pdq::block_partition_range(w.begin(), w.end(), goes_left, swapped);
      ASSERT_TRUE(w.begin() <= mid && mid <= w.end()) << "n " << n << ", answered " << answered;
      std::sort(w.begin(), w.end());
      ASSERT_EQ(w, sorted_v) << "not a permutation: n " << n << ", answered " << answered;
    }
  }
}

// With no bad partition allowed, the first unbalanced one (mostly equal keys, the pivot one of
// them) goes to heapsort: the O(n log n) fallback sorts too.
TEST(SequentialSort, HeapsortFallbackSorts) {
  std::mt19937 gen(3);
  std::vector<std::uint32_t> v(5000);
  for (auto& x : v) x = gen() % 10 == 0 ? static_cast<std::uint32_t>(gen()) : 0u;
  auto expected = v;
  std::sort(expected.begin(), expected.end());
  std::ranges::less less;
  promptly::detail::pdq::sort_loop<false>(v.begin(), v.end(), less, 1, true, nullptr);
  EXPECT_EQ(v, expected);
}

// Integers in their natural order take the in-place quicksort (equal ones are
// indistinguishable); anything that could tell equal elements apart keeps the merge sort.
TEST(StableSortDispatch, OnlyIntegersInTheirNaturalOrderSkipTheMergeSort) {
  using U = std::vector<std::uint32_t>::iterator;
  using D = std::vector<double>::iterator;
  static_assert(promptly::detail::stability_unobservable<U, std::ranges::less, std::identity>);
  static_assert(promptly::detail::stability_unobservable<U, std::greater<>, std::identity>);
  static_assert(!promptly::detail::stability_unobservable<D, std::ranges::less, std::identity>, "-0.0 == +0.0");
  static_assert(!promptly::detail::stability_unobservable<U, std::ranges::less, std::negate<>>, "a projection");
  auto by_tens = [](std::uint32_t a, std::uint32_t b) { return a / 10 < b / 10; };
  static_assert(!promptly::detail::stability_unobservable<U, decltype(by_tens), std::identity>, "a key comparator");
  // And the result of each path.
  std::vector<std::uint32_t> v(50'000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint32_t>((i * 2654435761u) % 1000);
  auto keyed = v;
  auto expected = v;
  std::sort(expected.begin(), expected.end(), std::greater<>{});
  promptly::parallel_stable_sort(v, std::greater<>{});
  EXPECT_EQ(v, expected);
  auto keyed_expected = keyed;
  std::stable_sort(keyed_expected.begin(), keyed_expected.end(), by_tens);
  promptly::parallel_stable_sort(keyed, by_tens);
  EXPECT_EQ(keyed, keyed_expected) << "equal keys (same tens) must keep their input order";
}

TEST_P(Algorithms, StableSortKeepsTheOrderOfEqualKeys) {
  for (std::uint32_t modulus : {1u, 3u, 1000u, 0xffffffffu}) {
    for (std::size_t n : edge_sizes()) {
      auto v = make_keyed(n, modulus, modulus + static_cast<std::uint32_t>(n));
      auto expected = v;
      std::stable_sort(expected.begin(), expected.end(), [](const keyed& a, const keyed& b) { return a.key < b.key; });
      rt.run([&] { promptly::parallel_stable_sort(v.begin(), v.end(), std::ranges::less{}, &keyed::key); });
      ASSERT_EQ(v, expected) << "modulus " << modulus << ", n " << n;
    }
  }
}

TEST_P(Algorithms, SortsTakeComparatorsProjectionsAndRanges) {
  const std::size_t n = 3 * static_cast<std::size_t>(promptly::detail::merge_leaf) + 11;
  auto v = make_input(n, shape::uniform, 1);
  std::deque<std::uint32_t> d(v.begin(), v.end());
  rt.run([&] {
    promptly::parallel_sort(v, std::greater<>{});
    promptly::parallel_sort(d);  // a deque: random access, not contiguous
  });
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end(), std::greater<>{}));
  EXPECT_TRUE(std::is_sorted(d.begin(), d.end()));
  // Strings go through the buffer's constructed path (not trivially constructible).
  std::vector<std::string> s(n);
  for (std::size_t i = 0; i < n; ++i) s[i] = std::to_string(v[i] % 5000) + "/" + std::to_string(i);
  auto expected = s;
  auto prefix = [](const std::string& x) { return std::stoi(x.substr(0, x.find('/'))); };
  std::stable_sort(expected.begin(), expected.end(), [&](const auto& a, const auto& b) { return prefix(a) < prefix(b); });
  rt.run([&] { promptly::parallel_stable_sort(s, std::ranges::less{}, prefix); });
  EXPECT_EQ(s, expected);
}

// ---- strings by key prefixes (detail/key_prefix_sort.hpp) ----

// Strings that make keys lie if they are built wrong: bytes above 0x7f (char is signed here,
// char_traits<char> orders bytes unsigned), embedded NULs against the keys' zero padding,
// prefixes of each other, empty strings, short (inside the object) and long ones.
std::vector<std::string> tricky_strings(std::size_t n, const std::string& shared, std::uint32_t seed) {
  std::mt19937 gen(seed);
  const std::string alphabet("ab\0\x7f\x80\xff", 6);
  std::vector<std::string> v(n);
  for (auto& s : v) {
    s = shared;
    const std::size_t len = gen() % 4 == 0 ? gen() % 40 : gen() % 12;
    for (std::size_t j = 0; j < len; ++j) s.push_back(alphabet[gen() % alphabet.size()]);
  }
  return v;
}

std::vector<std::string> letter_strings(std::size_t n, const std::string& shared, std::size_t distinct, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::string> pool(distinct);
  for (auto& s : pool) {
    s = shared;
    for (std::size_t j = 0, len = 1 + gen() % 24; j < len; ++j) s.push_back(static_cast<char>('a' + gen() % 26));
  }
  std::vector<std::string> v(n);
  for (auto& s : v) s = pool[gen() % distinct];
  return v;
}

TEST(KeyPrefixSort, KeyOrderImpliesStringOrder) {
  using promptly::detail::key_prefix_at;
  const std::vector<std::string> cases = {"",         std::string("\0", 1), std::string("ab\0", 3), "ab",       "abcdefgh",
                                          "abcdefghi", "abcdefgh\x80",        "\x80",                   "\xff\xff", "b"};
  for (std::size_t skip : {0u, 1u, 2u, 8u}) {
    for (const auto& a : cases) {
      for (const auto& b : cases) {
        if (key_prefix_at(a, skip) < key_prefix_at(b, skip) && a.compare(0, skip, b, 0, skip) == 0)
          EXPECT_LT(a, b) << "skip " << skip << ": a key order the strings contradict";
      }
    }
  }
  EXPECT_LT(key_prefix_at("\x80", 0), key_prefix_at("\xff", 0)) << "bytes compare unsigned";
  EXPECT_EQ(key_prefix_at("ab", 0), key_prefix_at(std::string("ab\0", 3), 0)) << "padding ties, the strings decide";
  EXPECT_EQ(key_prefix_at("abc", 5), 0u);
}

// Only std::string in the standard order, without a projection, takes the path.
TEST(KeyPrefixSort, AppliesOnlyToTheStandardOrderOfStrings) {
  using S = std::vector<std::string>::iterator;
  using promptly::detail::key_prefix_direction;
  static_assert(key_prefix_direction<S, std::ranges::less, std::identity> == 1);
  static_assert(key_prefix_direction<S, std::less<std::string>, std::identity> == 1);
  static_assert(key_prefix_direction<S, std::greater<>, std::identity> == -1);
  static_assert(key_prefix_direction<S, std::ranges::less, std::negate<>> == 0, "a projection");
  auto by_length = [](const std::string& a, const std::string& b) { return a.size() < b.size(); };
  static_assert(key_prefix_direction<S, decltype(by_length), std::identity> == 0, "a user comparator");
  static_assert(key_prefix_direction<std::vector<std::wstring>::iterator, std::ranges::less, std::identity> == 0);
  static_assert(key_prefix_direction<std::vector<std::uint32_t>::iterator, std::ranges::less, std::identity> == 0);
}

// Few distinct prefixes: the path declines and leaves the range as it was (the in-place sort
// then runs); distinct ones, shared prefixes included, take it.
TEST_P(Algorithms, KeyPrefixSortDeclinesWhenKeysRarelyTellStringsApart) {
  const std::size_t n = 4 * static_cast<std::size_t>(promptly::detail::key_prefix_min_size);
  promptly::detail::cancel_scope scope;
  rt.run([&] {
    auto few = letter_strings(n, "", 20, 1);
    const auto before = few;
    EXPECT_FALSE((promptly::detail::key_prefix_sort<1, false>(few.begin(), few.end(), scope)));
    EXPECT_EQ(few, before);
    auto small = letter_strings(static_cast<std::size_t>(promptly::detail::key_prefix_min_size) - 1, "", 100000, 2);
    EXPECT_FALSE((promptly::detail::key_prefix_sort<1, false>(small.begin(), small.end(), scope)));
    auto urls = letter_strings(n, "https://www.example.org/", 100000, 3);
    auto expected = urls;
    std::sort(expected.begin(), expected.end());
    EXPECT_TRUE((promptly::detail::key_prefix_sort<1, false>(urls.begin(), urls.end(), scope)));
    EXPECT_EQ(urls, expected);
  });
}

// A stop seen by the record sort: the path reports the strings handled, the range is as it
// was (it is only written after an unstopped record sort), and the scope reports the skip.
TEST_P(Algorithms, ACancelledKeyPrefixSortLeavesTheRangeUntouched) {
  auto v = letter_strings(4 * static_cast<std::size_t>(promptly::detail::key_prefix_min_size), "", 1'000'000, 9);
  const auto before = v;
  for (bool stable : {false, true}) {
    std::stop_source stop;
    stop.request_stop();
    promptly::detail::cancel_scope scope(stop.get_token());
    rt.run([&] {
      if (stable)
        EXPECT_TRUE((promptly::detail::key_prefix_sort<-1, true>(v.begin(), v.end(), scope)));
      else
        EXPECT_TRUE((promptly::detail::key_prefix_sort<1, false>(v.begin(), v.end(), scope)));
    });
    EXPECT_EQ(v, before);
    EXPECT_THROW(scope.finish("parallel_sort"), promptly::cancelled);
  }
}

TEST_P(Algorithms, StringSortsMatchStdSortAtEverySize) {
  const auto min = static_cast<std::size_t>(promptly::detail::key_prefix_min_size);
  for (std::size_t n : {min - 1, min, min + 1, 3 * min + 7, big(100'000)}) {
    for (const std::string shared : {"", "xy", "https://www.example.org/"}) {
      for (auto v : {tricky_strings(n, shared, static_cast<std::uint32_t>(n)), letter_strings(n, shared, n, 5),
                     letter_strings(n, shared, 3, 6)}) {
        auto up = v, down = v, stable = v;
        auto expected = v;
        std::sort(expected.begin(), expected.end());
        rt.run([&] {
          promptly::parallel_sort(up);
          promptly::parallel_sort(down, std::greater<std::string>{});
          promptly::parallel_stable_sort(stable, std::less<>{});
        });
        ASSERT_EQ(up, expected) << "n " << n << ", shared prefix '" << shared << "'";
        ASSERT_EQ(stable, expected) << "n " << n << ", shared prefix '" << shared << "'";
        std::ranges::reverse(expected);
        ASSERT_EQ(down, expected) << "n " << n << ", shared prefix '" << shared << "'";
      }
    }
  }
}

// ---- integers with few distinct values: counted (detail/few_values_sort.hpp) ----

TEST(FewValuesSort, AppliesOnlyToIntegersInTheirStandardOrder) {
  using promptly::detail::few_values_direction;
  using U = std::vector<std::uint32_t>::iterator;
  static_assert(few_values_direction<U, std::ranges::less, std::identity> == 1);
  static_assert(few_values_direction<U, std::greater<>, std::identity> == -1);
  static_assert(few_values_direction<std::int8_t*, std::less<std::int8_t>, std::identity> == 1);
  static_assert(few_values_direction<U, std::ranges::less, std::negate<>> == 0, "a projection");
  auto by_low_bit = [](std::uint32_t a, std::uint32_t b) { return (a & 1) < (b & 1); };
  static_assert(few_values_direction<U, decltype(by_low_bit), std::identity> == 0, "a user comparator");
  static_assert(few_values_direction<std::vector<double>::iterator, std::ranges::less, std::identity> == 0, "-0.0 == +0.0");
  static_assert(few_values_direction<std::deque<int>::iterator, std::ranges::less, std::identity> == 0, "not contiguous");
}

namespace {

// n keys drawn from `values`, in random order.
template <class T>
std::vector<T> drawn_from(std::size_t n, const std::vector<T>& values, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = values[gen() % values.size()];
  return v;
}

}  // namespace

// Both index kinds (values within 4096 of each other; spread over the type), signed keys,
// both directions, sizes around the cutoff; the result is std::sort's.
TEST_P(Algorithms, FewValuesSortMatchesStdSort) {
  const auto min = static_cast<std::size_t>(promptly::detail::few_values_min_size);
  const std::vector<std::int64_t> spread = {std::numeric_limits<std::int64_t>::min(), -1, 0, 7, 1LL << 40,
                                            std::numeric_limits<std::int64_t>::max()};
  const std::vector<std::int64_t> close = {-2000, -3, 0, 5, 2000, 2047};
  for (std::size_t n : {min - 1, min, 3 * min + 5}) {
    for (const auto& values : {spread, close}) {
      auto v = drawn_from(n, values, static_cast<std::uint32_t>(n));
      auto up = v, down = v, stable = v, counted_up = v, counted_down = v;
      promptly::detail::cancel_scope scope;
      rt.run([&] {
        promptly::parallel_sort(up);
        promptly::parallel_sort(down, std::greater<>{});
        promptly::parallel_stable_sort(stable);
        // The path itself, which the calls above take from the cutoff on.
        EXPECT_EQ(promptly::detail::few_values_sort<1>(counted_up.begin(), counted_up.end(), scope), n >= min);
        EXPECT_EQ(promptly::detail::few_values_sort<-1>(counted_down.begin(), counted_down.end(), scope), n >= min);
      });
      std::sort(v.begin(), v.end());
      ASSERT_EQ(up, v) << "n " << n;
      ASSERT_EQ(stable, v) << "n " << n;
      if (n >= min) ASSERT_EQ(counted_up, v) << "n " << n;
      std::ranges::reverse(v);
      ASSERT_EQ(down, v) << "n " << n;
      if (n >= min) ASSERT_EQ(counted_down, v) << "n " << n;
    }
  }
  auto bytes = drawn_from<std::int8_t>(2 * min, {-128, -1, 0, 1, 127}, 3);
  auto shorts = drawn_from<std::uint16_t>(2 * min, {0, 1, 65535}, 4);
  auto chars = drawn_from<char>(2 * min, {'a', 'b', static_cast<char>(0xff)}, 5);
  auto expected_bytes = bytes;
  auto expected_shorts = shorts;
  auto expected_chars = chars;
  promptly::detail::cancel_scope scope;
  rt.run([&] {
    EXPECT_TRUE(promptly::detail::few_values_sort<1>(bytes.begin(), bytes.end(), scope));
    promptly::parallel_sort(shorts);
    promptly::parallel_sort(chars);
  });
  std::sort(expected_bytes.begin(), expected_bytes.end());
  std::sort(expected_shorts.begin(), expected_shorts.end());
  std::sort(expected_chars.begin(), expected_chars.end());
  EXPECT_EQ(bytes, expected_bytes);
  EXPECT_EQ(shorts, expected_shorts);
  EXPECT_EQ(chars, expected_chars);
}

// Keys the sample missed: a few (here rare ones, the last key among them) are counted apart and
// sorted with the rest; more than few_values_max of them stop the count, and the path declines
// with the range untouched (the quicksort then sorts it). Many values: it declines at once.
TEST_P(Algorithms, FewValuesSortCountsRareKeysTheSampleMissedOrDeclines) {
  const std::size_t n = 4 * static_cast<std::size_t>(promptly::detail::few_values_min_size);
  const std::size_t too_many = promptly::detail::few_values_max + 1;
  promptly::detail::cancel_scope scope;
  auto rare = drawn_from<std::uint32_t>(n, {1, 2, 3}, 7);
  for (std::uint32_t j = 0; j < 5; ++j) rare[n - 1 - j * 1000] = 1000 + j;  // odd places: never sampled (every n / 512-th)
  auto expected = rare;
  std::sort(expected.begin(), expected.end());
  auto spread = drawn_from<std::uint32_t>(n, {1, 2, 3}, 8);
  for (std::uint32_t j = 0; j < too_many; ++j) spread[n - 1 - j * 1000] = 5000 + j;  // near the end, never sampled
  const auto spread_before = spread;
  std::vector<std::uint32_t> thousand(1000);
  std::iota(thousand.begin(), thousand.end(), 0u);
  auto many = drawn_from<std::uint32_t>(n, thousand, 9);
  const auto many_before = many;
  rt.run([&] {
    EXPECT_TRUE(promptly::detail::few_values_sort<1>(rare.begin(), rare.end(), scope));
    EXPECT_FALSE(promptly::detail::few_values_sort<1>(spread.begin(), spread.end(), scope));
    EXPECT_FALSE(promptly::detail::few_values_sort<1>(many.begin(), many.end(), scope));
  });
  EXPECT_EQ(rare, expected);
  EXPECT_EQ(spread, spread_before);
  EXPECT_EQ(many, many_before);
  auto spread_sorted = spread_before;
  std::sort(spread_sorted.begin(), spread_sorted.end());
  rt.run([&] { promptly::parallel_sort(spread); });
  EXPECT_EQ(spread, spread_sorted);
}

// A stop seen by the count: the path reports the keys handled, the range is as it was, and the
// scope reports the skip (parallel_sort then throws cancelled).
TEST_P(Algorithms, ACancelledFewValuesSortLeavesTheRangeUntouched) {
  auto v = drawn_from<std::uint32_t>(4 * static_cast<std::size_t>(promptly::detail::few_values_min_size), {5, 6, 7, 8}, 9);
  const auto before = v;
  std::stop_source stop;
  stop.request_stop();
  promptly::detail::cancel_scope scope(stop.get_token());
  rt.run([&] { EXPECT_TRUE(promptly::detail::few_values_sort<1>(v.begin(), v.end(), scope)); });
  EXPECT_EQ(v, before);
  EXPECT_THROW(scope.finish("parallel_sort"), promptly::cancelled);
  rt.run([&] { EXPECT_THROW(promptly::parallel_sort(stop.get_token(), v), promptly::cancelled); });
  EXPECT_EQ(v, before);
}

// Sorted input with k random pairs swapped, and sorted input with k keys moved far (the
// partial insertion sorts and the run checks meet a few misplaced keys), at sizes around a block,
// a leaf and many leaves.
TEST_P(Algorithms, SortMatchesStdSortOnNearlySortedInputs) {
  const auto b = static_cast<std::size_t>(promptly::detail::pdq::block_size);
  const auto leaf = static_cast<std::size_t>(promptly::detail::sort_leaf);
  for (std::size_t n : {2 * b - 1, 2 * b, 2 * b + 1, leaf + 1, big(100'000)}) {
    for (std::size_t k : {1u, 2u, 8u, 64u}) {
      std::mt19937 gen(static_cast<std::uint32_t>(n * 131 + k));
      std::vector<std::uint32_t> expected(n);
      std::iota(expected.begin(), expected.end(), 0u);
      auto swapped = expected;
      for (std::size_t i = 0; i < k; ++i) std::swap(swapped[gen() % n], swapped[gen() % n]);
      auto moved = expected;
      for (std::size_t i = 0; i < k; ++i) {  // take a key out and put it back elsewhere
        const std::size_t from = gen() % n, to = gen() % n;
        const std::uint32_t key = moved[from];
        moved.erase(moved.begin() + static_cast<std::ptrdiff_t>(from));
        moved.insert(moved.begin() + static_cast<std::ptrdiff_t>(to), key);
      }
      rt.run([&] {
        promptly::parallel_sort(swapped);
        promptly::parallel_sort(moved);
      });
      ASSERT_EQ(swapped, expected) << "swaps: n " << n << ", k " << k;
      ASSERT_EQ(moved, expected) << "moves: n " << n << ", k " << k;
    }
  }
}

// A comparator that throws during a block partition (the first partitions of a range compare
// every key), at sizes around one and a few blocks, a leaf and many leaves: the exception is
// rethrown and the range is a permutation of its input.
TEST_P(Algorithms, AThrowingComparatorInsideABlockPartitionLeavesAPermutation) {
  const auto b = static_cast<std::size_t>(promptly::detail::pdq::block_size);
  const auto leaf = static_cast<std::size_t>(promptly::detail::sort_leaf);
  for (std::size_t n : {2 * b - 1, 2 * b, 2 * b + 1, 5 * b + 3, leaf + 1, big(30'000)}) {
    for (std::size_t limit : {n / 5, n / 2 + 1, n - 2}) {
      auto v = make_input(n, shape::uniform, static_cast<std::uint32_t>(n + limit));
      auto sorted_original = v;
      std::sort(sorted_original.begin(), sorted_original.end());
      std::atomic<long> calls{0};
      const std::string what = what_of<std::runtime_error>(
          [&] { rt.run([&] { promptly::parallel_sort(v, throwing_less{&calls, static_cast<long>(limit)}); }); });
      EXPECT_EQ(what, "comparator") << "n " << n << ", limit " << limit;
      std::sort(v.begin(), v.end());
      ASSERT_EQ(v, sorted_original) << "not a permutation: n " << n << ", limit " << limit;
    }
  }
}

TEST_P(Algorithms, AThrowingComparatorLeavesAPermutationAndRethrows) {
  const std::size_t n = big(60'000);
  // Throws at the first comparison, early, midway and late (a sort of n keys compares about
  // n log2 n times).
  const long nl = static_cast<long>(n);
  for (long limit : {0L, 5L, nl, 3 * nl}) {
    for (bool stable : {false, true}) {
      auto v = make_input(n, shape::uniform, static_cast<std::uint32_t>(limit));
      const auto original = v;
      std::atomic<long> calls{0};
      const std::string what = what_of<std::runtime_error>([&] {
        rt.run([&] {
          if (stable)
            promptly::parallel_stable_sort(v, throwing_less{&calls, limit});
          else
            promptly::parallel_sort(v, throwing_less{&calls, limit});
        });
      });
      EXPECT_EQ(what, "comparator") << "limit " << limit << ", stable " << stable;
      std::sort(v.begin(), v.end());
      auto sorted_original = original;
      std::sort(sorted_original.begin(), sorted_original.end());
      ASSERT_EQ(v, sorted_original) << "not a permutation: limit " << limit << ", stable " << stable;
    }
  }
}

// A comparator that throws midway through each input shape (each takes other paths: run
// detection, equal-key splitting, partial insertion sorts, pattern breaking).
TEST_P(Algorithms, AThrowingComparatorLeavesAPermutationForEveryShape) {
  const std::size_t n = big(20'000);
  for (shape s : all_shapes) {
    auto v = make_input(n, s, 11);
    const auto original = v;
    std::atomic<long> calls{0};
    bool threw = false;
    try {
      rt.run([&] { promptly::parallel_sort(v, throwing_less{&calls, static_cast<long>(n / 2)}); });
    } catch (const std::runtime_error&) {
      threw = true;
    }
    EXPECT_TRUE(threw) << "shape " << static_cast<int>(s);
    std::sort(v.begin(), v.end());
    auto sorted_original = original;
    std::sort(sorted_original.begin(), sorted_original.end());
    ASSERT_EQ(v, sorted_original) << "not a permutation: shape " << static_cast<int>(s);
  }
}

TEST_P(Algorithms, AThrowingProjectionOfStringsLeavesAPermutation) {
  const std::size_t n = big(50'000);
  std::vector<std::string> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::to_string((i * 7919) % n);
  const auto original = v;
  std::atomic<long> calls{0};
  auto proj = [&](const std::string& s) -> const std::string& {
    if (calls.fetch_add(1, std::memory_order_relaxed) == 30'000) throw std::length_error("projection");
    return s;
  };
  for (bool stable : {false, true}) {
    calls = 0;
    v = original;
    EXPECT_EQ(what_of<std::length_error>([&] {
                rt.run([&] {
                  if (stable)
                    promptly::parallel_stable_sort(v, std::ranges::less{}, proj);
                  else
                    promptly::parallel_sort(v, std::ranges::less{}, proj);
                });
              }),
              "projection");
    std::sort(v.begin(), v.end());
    auto sorted_original = original;
    std::sort(sorted_original.begin(), sorted_original.end());
    ASSERT_EQ(v, sorted_original) << "stable " << stable;
  }
}

// ---- scans ----

namespace {

// x -> a * x + b mod 2^32, composed left to right: associative, not commutative.
struct affine {
  std::uint32_t a = 1;
  std::uint32_t b = 0;
  friend bool operator==(const affine&, const affine&) = default;
};
affine then(const affine& f, const affine& g) { return {g.a * f.a, g.a * f.b + g.b}; }

std::vector<std::size_t> scan_sizes() {
  const std::size_t block = promptly::detail::scan_min_block;
  return {0, 1, 2, block - 1, block, block + 1, 2 * block + 3, big(1'000'000)};
}

}  // namespace

TEST_P(Algorithms, ScansMatchStdScansForEverySize) {
  for (std::size_t n : scan_sizes()) {
    auto in = make_input(n, shape::uniform, static_cast<std::uint32_t>(n));
    std::vector<std::uint64_t> got(n), expected(n);
    auto widen = [](std::uint32_t x) { return static_cast<std::uint64_t>(x); };

    std::inclusive_scan(in.begin(), in.end(), expected.begin(), std::plus<std::uint64_t>{}, std::uint64_t{0});
    rt.run([&] { promptly::parallel_inclusive_scan(in.begin(), in.end(), got.begin(), std::plus<>{}, std::uint64_t{0}); });
    ASSERT_EQ(got, expected) << "inclusive, n " << n;

    std::exclusive_scan(in.begin(), in.end(), expected.begin(), std::uint64_t{5});
    auto end = rt.run([&] { return promptly::parallel_exclusive_scan(in, got.begin(), std::uint64_t{5}); });
    ASSERT_EQ(got, expected) << "exclusive, n " << n;
    ASSERT_EQ(end, got.end());

    std::transform_inclusive_scan(in.begin(), in.end(), expected.begin(), std::plus<>{}, widen);
    rt.run([&] { promptly::parallel_transform_inclusive_scan(in, got.begin(), std::plus<>{}, widen); });
    ASSERT_EQ(got, expected) << "transform inclusive, n " << n;

    std::transform_exclusive_scan(in.begin(), in.end(), expected.begin(), std::uint64_t{1}, std::plus<>{}, widen);
    rt.run([&] {
      promptly::parallel_transform_exclusive_scan(in.begin(), in.end(), got.begin(), std::uint64_t{1}, std::plus<>{}, widen);
    });
    ASSERT_EQ(got, expected) << "transform exclusive, n " << n;

    // In place, with a plain value type.
    auto inplace = in;
    std::vector<std::uint32_t> expected32(n);
    std::inclusive_scan(in.begin(), in.end(), expected32.begin());
    rt.run([&] { promptly::parallel_inclusive_scan(inplace.begin(), inplace.end(), inplace.begin()); });
    ASSERT_EQ(inplace, expected32) << "in place, n " << n;
    inplace = in;
    std::exclusive_scan(in.begin(), in.end(), expected32.begin(), 3u);
    rt.run([&] { promptly::parallel_exclusive_scan(inplace.begin(), inplace.end(), inplace.begin(), 3u); });
    ASSERT_EQ(inplace, expected32) << "exclusive in place, n " << n;
  }
}

TEST_P(Algorithms, ScansKeepTheOperandOrder) {
  const std::size_t n = 5 * promptly::detail::scan_min_block + 17;
  std::mt19937 gen(3);
  std::vector<affine> in(n);
  for (auto& f : in) f = {static_cast<std::uint32_t>(gen()) | 1u, static_cast<std::uint32_t>(gen())};
  std::vector<affine> expected(n), got(n);
  std::inclusive_scan(in.begin(), in.end(), expected.begin(), then);
  rt.run([&] { promptly::parallel_inclusive_scan(in.begin(), in.end(), got.begin(), then); });
  EXPECT_EQ(got, expected);
  std::exclusive_scan(in.begin(), in.end(), expected.begin(), affine{3, 4}, then);
  rt.run([&] { promptly::parallel_exclusive_scan(in.begin(), in.end(), got.begin(), affine{3, 4}, then); });
  EXPECT_EQ(got, expected);
}

TEST_P(Algorithms, AScanRethrowsWhatItsOperationThrew) {
  const std::size_t n = 4 * promptly::detail::scan_min_block;
  std::vector<int> in(n, 1), out(n);
  auto op = [](int a, int b) {
    if (a == 2 * static_cast<int>(promptly::detail::scan_min_block) + 5) throw std::domain_error("op");
    return a + b;
  };
  EXPECT_EQ(what_of<std::domain_error>([&] { rt.run([&] { promptly::parallel_inclusive_scan(in.begin(), in.end(), out.begin(), op); }); }),
            "op");
}

// On one worker every block starts from its left neighbour's running total, so each is scanned
// in one pass: unary runs once per element (a sequential loop's memory traffic: one read of the
// input, one write of the output).
TEST(ScanOnOneWorker, ReadsEachElementOnce) {
  promptly::runtime_config cfg;
  cfg.workers = 1;
  promptly::runtime rt(cfg);
  const std::size_t n = 8 * promptly::detail::scan_min_block + 5;
  std::vector<std::uint32_t> in(n);
  std::iota(in.begin(), in.end(), 0u);
  std::vector<std::uint64_t> got(n), expected(n);
  std::atomic<std::size_t> calls{0};
  auto widen = [&](std::uint32_t x) {
    calls.fetch_add(1, std::memory_order_relaxed);
    return static_cast<std::uint64_t>(x);
  };
  rt.run([&] { promptly::parallel_transform_inclusive_scan(in, got.begin(), std::plus<>{}, widen); });
  std::transform_inclusive_scan(in.begin(), in.end(), expected.begin(), std::plus<>{}, [](std::uint32_t x) { return std::uint64_t{x}; });
  EXPECT_EQ(got, expected);
  EXPECT_EQ(calls.load(), n);
  calls = 0;
  rt.run([&] { promptly::parallel_transform_exclusive_scan(in, got.begin(), std::uint64_t{7}, std::plus<>{}, widen); });
  std::transform_exclusive_scan(in.begin(), in.end(), expected.begin(), std::uint64_t{7}, std::plus<>{},
                                [](std::uint32_t x) { return std::uint64_t{x}; });
  EXPECT_EQ(got, expected);
  EXPECT_EQ(calls.load(), n);
}

// Blocks that a thief reaches before the running total does are reduced first and scanned in a
// second pass from the total the per-block sums give them. The first element holds block 0 until
// an element of the second-to-last block was read, which a thief did with no running total yet:
// the scan must still match std's, with a non-commutative operation, inclusive and exclusive.
TEST_P(Algorithms, ScanBlocksReachedBeforeTheRunningTotalAreScannedFromTheirPrefix) {
  if (GetParam() < 2) GTEST_SKIP() << "needs a thief";
  const std::size_t block = promptly::detail::scan_min_block;
  const std::size_t n = 6 * block + 9;
  std::vector<std::uint32_t> in(n);
  std::iota(in.begin(), in.end(), 0u);
  auto as_affine = [](std::uint32_t i) { return affine{2 * i + 1, i * 2654435761u}; };
  std::vector<affine> got(n), expected(n);
  for (bool inclusive : {true, false}) {
    std::atomic<bool> thief_ahead{false};
    std::atomic<std::size_t> calls{0};
    auto unary = [&](std::uint32_t i) {
      calls.fetch_add(1, std::memory_order_relaxed);
      if (i >= 4 * block && i < 5 * block) thief_ahead.store(true, std::memory_order_relaxed);
      if (i == 0) {  // block 0's first element, read once (block 0 never waits for a total)
        EXPECT_TRUE(wait_until([&] { return thief_ahead.load(std::memory_order_relaxed); })) << "no thief reached block 4";
      }
      return as_affine(i);
    };
    watchdog guard(2 * hang_guard, "a scan with a block held back");
    if (inclusive) {
      rt.run([&] { promptly::parallel_transform_inclusive_scan(in, got.begin(), then, unary); });
      std::transform_inclusive_scan(in.begin(), in.end(), expected.begin(), then, as_affine);
    } else {
      rt.run([&] { promptly::parallel_transform_exclusive_scan(in, got.begin(), affine{3, 4}, then, unary); });
      std::transform_exclusive_scan(in.begin(), in.end(), expected.begin(), affine{3, 4}, then, as_affine);
    }
    EXPECT_EQ(got, expected) << "inclusive " << inclusive;
    EXPECT_GT(calls.load(), n) << "no block was reduced ahead of the running total";
  }
}

// ---- parallel_invoke ----

TEST_P(Algorithms, InvokeRunsEveryCallableOnceAndRethrowsTheLeftmostException) {
  std::array<std::atomic<int>, 7> ran{};
  rt.run([&] {
    promptly::parallel_invoke([&] { ran[0]++; }, [&] { ran[1]++; }, [&] { ran[2]++; }, [&] { ran[3]++; },
                              [&] { ran[4]++; }, [&] { ran[5]++; }, [&] { ran[6]++; });
    promptly::parallel_invoke([&] { ran[0]++; });
  });
  EXPECT_EQ(ran[0], 2);
  for (std::size_t i = 1; i < ran.size(); ++i) EXPECT_EQ(ran[i], 1) << i;
  std::atomic<int> finished{0};
  EXPECT_EQ(what_of<std::runtime_error>([&] {
              rt.run([&] {
                promptly::parallel_invoke([&] { finished++; }, [&] { finished++; throw std::runtime_error("second"); },
                                          [&] { finished++; }, [&] { finished++; throw std::runtime_error("fourth"); });
              });
            }),
            "second");
  EXPECT_EQ(finished, 4);
}

// ---- multidimensional loops ----

TEST_P(Algorithms, ABoxBlurOverTilesMatchesTheSerialOne) {
  const std::size_t h = 301, w = 517;
  std::vector<float> img(h * w), serial(h * w), parallel(h * w);
  std::mt19937 gen(5);
  for (auto& p : img) p = static_cast<float>(gen() % 256);
  auto blur = [&](std::size_t y, std::size_t x) {
    float sum = 0;
    int count = 0;
    for (std::size_t yy = y > 0 ? y - 1 : 0; yy <= std::min(h - 1, y + 1); ++yy)
      for (std::size_t xx = x > 0 ? x - 1 : 0; xx <= std::min(w - 1, x + 1); ++xx, ++count) sum += img[yy * w + xx];
    return sum / static_cast<float>(count);
  };
  for (std::size_t y = 0; y < h; ++y)
    for (std::size_t x = 0; x < w; ++x) serial[y * w + x] = blur(y, x);
  std::atomic<std::size_t> tiles{0}, covered{0};
  std::atomic<bool> too_big{false};
  const std::size_t grain = 1000;
  rt.run([&] {
    promptly::parallel_for(promptly::index_box(promptly::index_range<std::size_t>(0, h), promptly::index_range<std::size_t>(0, w)),
                           grain, [&](const promptly::index_box<std::size_t, 2>& tile) {
                             if (tile.size() > grain) too_big = true;
                             tiles++;
                             covered += tile.size();
                             for (std::size_t y : tile[0])
                               for (std::size_t x : tile[1]) parallel[y * w + x] = blur(y, x);
                           });
  });
  EXPECT_EQ(parallel, serial);
  EXPECT_FALSE(too_big);
  EXPECT_EQ(covered, h * w);
  EXPECT_GE(tiles, h * w / grain);
}

TEST_P(Algorithms, A3DBoxIsCoveredOnceAndTilesStayCubic) {
  const int n0 = 37, n1 = 5, n2 = 64;
  std::vector<std::atomic<int>> seen(n0 * n1 * n2);
  std::atomic<bool> flat{false};
  rt.run([&] {
    promptly::parallel_for(promptly::index_box(promptly::index_range(0, n0), promptly::index_range(0, n1), promptly::index_range(0, n2)), 64,
                           [&](const promptly::index_box<int, 3>& b) {
                             // Halving the longest side keeps every side within 2x of the others,
                             // or at its full (short) extent.
                             for (std::size_t d = 0; d < 3; ++d)
                               for (std::size_t e = 0; e < 3; ++e)
                                 if (b[d].size() > 2 * b[e].size() + 1 && b[e].size() != static_cast<std::size_t>(std::array{n0, n1, n2}[e]))
                                   flat = true;
                             for (int i : b[0])
                               for (int j : b[1])
                                 for (int k : b[2]) seen[static_cast<std::size_t>((i * n1 + j) * n2 + k)]++;
                           });
    // Empty boxes run nothing.
    promptly::parallel_for(promptly::index_box(promptly::index_range(0, 0), promptly::index_range(0, 9)), 1,
                           [&](const promptly::index_box<int, 2>&) { flat = true; });
  });
  for (auto& s : seen) ASSERT_EQ(s, 1);
  EXPECT_FALSE(flat);
}

// ---- levels ----

// Work of an algorithm called from a task stays at the task's level: every comparison, scan
// operation and invoked callable of a task at level 1 and of one at level 5 sees its own level.
TEST_P(Algorithms, NestedAlgorithmsKeepTheirCallersLevel) {
  std::atomic<int> wrong{0};
  auto work = [&](unsigned lvl) {
    auto check = [&wrong, lvl] {
      if (promptly::current_level() != lvl) wrong++;
    };
    auto v = make_input(big(60'000), shape::uniform, lvl);
    promptly::parallel_sort(v, [&](std::uint32_t a, std::uint32_t b) {
      check();
      return a < b;
    });
    promptly::parallel_stable_sort(v, [&](std::uint32_t a, std::uint32_t b) noexcept {
      if (promptly::current_level() != lvl) wrong++;
      return a > b;
    });
    std::vector<std::uint32_t> out(v.size());
    promptly::parallel_inclusive_scan(v.begin(), v.end(), out.begin(), [&](std::uint32_t a, std::uint32_t b) {
      check();
      return a + b;
    });
    promptly::parallel_invoke(check, check, check);
    promptly::parallel_for(promptly::index_box(promptly::index_range(0, 64), promptly::index_range(0, 64)), 16,
                           [&](const promptly::index_box<int, 2>&) { check(); });
    return std::is_sorted(v.begin(), v.end(), std::greater<>{});
  };
  const bool sorted = rt.run([&] {
    promptly::task_group tg;
    std::atomic<bool> ok1{false}, ok5{false};
    tg.spawn(promptly::level{1}, [&] { ok1 = work(1); });
    tg.spawn(promptly::level{5}, [&] { ok5 = work(5); });
    tg.wait();
    return ok1 && ok5;
  });
  EXPECT_TRUE(sorted);
  EXPECT_EQ(wrong, 0);
}

INSTANTIATE_TEST_SUITE_P(Workers, Algorithms, ::testing::Values(1u, 2u, 4u));

// Once, at two workers: the size at which most leaves run as stolen work.
TEST(AlgorithmsLarge, SortAMillionKeys) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  promptly::runtime rt(cfg);
  auto v = make_input(big(1'000'000), shape::uniform, 7);
  auto expected = v;
  std::sort(expected.begin(), expected.end());
  rt.run([&] { promptly::parallel_sort(v); });
  EXPECT_EQ(v, expected);
  auto w = make_keyed(big(1'000'000), 1000, 8);
  auto stable_expected = w;
  std::stable_sort(stable_expected.begin(), stable_expected.end(), [](const keyed& a, const keyed& b) { return a.key < b.key; });
  rt.run([&] { promptly::parallel_stable_sort(w, {}, &keyed::key); });
  EXPECT_EQ(w, stable_expected);
}

// ---- outside a runtime ----

// From a thread that is no worker, every call runs on the default runtime (started here if no
// earlier test started it) and returns when it finished.
TEST(AlgorithmsOutsideRuntime, RunOnTheDefaultRuntime) {
  auto v = make_input(20'000, shape::uniform, 11);
  auto expected = v;
  std::sort(expected.begin(), expected.end());
  std::atomic<int> on_worker{0};
  promptly::parallel_sort(v, [&](std::uint32_t a, std::uint32_t b) {
    if (promptly::detail::current_worker() != nullptr) on_worker = 1;
    return a < b;
  });
  EXPECT_EQ(v, expected);
  EXPECT_EQ(on_worker, 1);
  std::vector<std::uint32_t> out(v.size());
  promptly::parallel_exclusive_scan(v, out.begin(), 0u);
  EXPECT_EQ(out[1], v[0]);
  std::atomic<int> off_worker{0};
  promptly::parallel_for(0, 10'000, [&](int) {
    if (promptly::detail::current_worker() == nullptr) off_worker++;
  });
  promptly::parallel_invoke([&] { off_worker += promptly::detail::current_worker() == nullptr; }, [] {});
  EXPECT_EQ(off_worker, 0);
  EXPECT_EQ(promptly::parallel_reduce(1, 11, 1L, [](int i) { return static_cast<long>(i); }, std::multiplies<>{}), 3'628'800L);
  EXPECT_THROW(promptly::default_runtime_config({}), std::logic_error);  // it runs already
  EXPECT_THROW(promptly::parallel_for(0, 100, 1, [](int i) {
                 if (i == 42) throw std::out_of_range("42");
               }),
               std::out_of_range);
}

// The explicit opt-out: in a sequential_region, calls outside a runtime run on the calling
// thread, in index order, as they all did before the default runtime.
TEST(AlgorithmsOutsideRuntime, ASequentialRegionRunsThemOnTheCallerInOrder) {
  promptly::sequential_region seq;
  std::vector<int> order;  // no lock: one thread
  promptly::parallel_for(0, 10, 2, [&](int i) { order.push_back(i); });
  promptly::parallel_for(10, 20, [&](int i) { order.push_back(i); });
  promptly::parallel_invoke([&] { order.push_back(20); }, [&] { order.push_back(21); });
  std::vector<int> expected(22);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  auto v = make_input(20'000, shape::uniform, 12);
  promptly::parallel_stable_sort(v, [](std::uint32_t a, std::uint32_t b) {
    if (promptly::detail::current_worker() != nullptr) throw std::logic_error("on a worker");
    return a < b;
  });
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
}

// Runs in a child process started by the next test: configures the default runtime, uses it
// from main, and returns; the process's exit must shut it down without a hang or a leak.
TEST(DefaultRuntimeChild, ConfiguredUsedAndLeftForExit) {
  if (std::getenv("PROMPTLY_ALGORITHMS_TEST_CHILD") == nullptr) GTEST_SKIP() << "run by DefaultRuntime.StartsOnFirstUseAndShutsDownAtExit";
  promptly::runtime_config cfg;
  EXPECT_THROW(promptly::default_runtime_config([] {
                 promptly::runtime_config bad;
                 bad.levels = 0;
                 return bad;
               }()),
               std::invalid_argument);
  cfg.workers = 3;
  promptly::default_runtime_config(cfg);
  auto v = make_input(big(100'000), shape::uniform, 13);
  promptly::parallel_sort(v);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_EQ(promptly::default_runtime().workers(), 3u);
  EXPECT_THROW(promptly::default_runtime_config(cfg), std::logic_error);
  // Work still running when main returns: the exit waits for it (runtime::shutdown).
  auto pending = std::make_shared<std::atomic<int>>(0);
  (void)promptly::default_runtime().submit([pending] {
    promptly::parallel_for(0, 1000, [&](int) { pending->fetch_add(1, std::memory_order_relaxed); });
  });
}

TEST(DefaultRuntime, StartsOnFirstUseAndShutsDownAtExit) {
  if (std::getenv("PROMPTLY_ALGORITHMS_TEST_CHILD") != nullptr) GTEST_SKIP();
  watchdog guard(hang_guard, "a child process that used the default runtime and exited");
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.emplace_back("PROMPTLY_ALGORITHMS_TEST_CHILD=1");
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe", filter = "--gtest_filter=DefaultRuntimeChild.*";
  char* argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of a signal: " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's test failed, or a sanitizer reported at its exit";
}

// ---- the adaptive split (loops without a grain) ----

namespace {

// The pieces a range-form body received, in any order.
struct pieces {
  std::mutex m;
  std::vector<std::pair<long, long>> seen;
  void add(long a, long b) {
    std::lock_guard<std::mutex> lock(m);
    seen.emplace_back(a, b);
  }
  bool tile(long first, long last) {
    std::sort(seen.begin(), seen.end());
    long at = first;
    for (auto [a, b] : seen) {
      if (a != at || b <= a) return false;
      at = b;
    }
    return at == last;
  }
};

}  // namespace

// With nothing stolen (one worker), a range splits into 8 pieces per worker: a budget of 4
// splits halved at each level gives 2^3 pieces, each run in chunks of a sixteenth of it (the lazy
// split offers halves of the rest, which the one worker takes back, at the same chunk size);
// small ranges stop at pieces of one index.
TEST(AlgorithmsAdaptive, OneWorkerCutsARangeIntoEightPiecesOfSixteenChunks) {
  promptly::runtime_config cfg;
  cfg.workers = 1;
  promptly::runtime rt(cfg);
  pieces p;
  rt.run([&] { promptly::parallel_for(promptly::index_range(0L, 1'000'000L), [&](promptly::index_range<long> r) { p.add(r.first(), r.last()); }); });
  EXPECT_TRUE(p.tile(0, 1'000'000));
  EXPECT_GE(p.seen.size(), 8u * 16u);
  EXPECT_LE(p.seen.size(), 8u * 17u);
  for (auto [a, b] : p.seen) EXPECT_LE(b - a, (125'000 + 15) / 16) << a;
  pieces small;
  rt.run([&] { promptly::parallel_for(promptly::index_range(0L, 3L), [&](promptly::index_range<long> r) { small.add(r.first(), r.last()); }); });
  EXPECT_EQ(small.seen.size(), 3u);
  EXPECT_TRUE(small.tile(0, 3));
}

// Lazy splitting: a piece the budget no longer divides, whose worker has nothing in its deque,
// offers half of its rest before each chunk, so an idle worker gets work while the piece's first
// chunk still runs. Before it, the piece ran as one call and nobody could help.
namespace {

// Index 0's chunk waits until a chunk of [800, 1600) ran on another thread. The wait's bound
// only turns a regression into a failure instead of a hang.
struct first_chunk_waits_for_help {
  std::mutex m;
  std::condition_variable cv;
  std::set<std::thread::id> rest_threads;
  bool at_first() {
    std::unique_lock lock(m);
    const auto me = std::this_thread::get_id();
    return cv.wait_for(lock, std::chrono::seconds(30), [&] {
      return std::any_of(rest_threads.begin(), rest_threads.end(), [&](std::thread::id t) { return t != me; });
    });
  }
  void at_rest() {
    std::lock_guard lock(m);
    rest_threads.insert(std::this_thread::get_id());
    cv.notify_all();
  }
};

}  // namespace

TEST(AlgorithmsAdaptive, AnUnsplittablePieceOffersHalfItsRestToAnIdleWorker) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  promptly::runtime rt(cfg);
  first_chunk_waits_for_help sync;
  pieces seen;
  bool helped = false;
  auto leaf = [&](long a, long b) {
    seen.add(a, b);
    if (a == 0) {
      ASSERT_LT(b, 1600) << "the piece ran as one call";
      helped = sync.at_first();
    } else if (a >= 800) {
      sync.at_rest();
    }
  };
  promptly::detail::cancel_scope scope;
  rt.run([&] { promptly::detail::split_range_adaptive(0L, 1600L, promptly::detail::adaptive_splitter{0, 2}, false, leaf, scope); });
  scope.finish("test");
  EXPECT_TRUE(helped) << "no other worker took the offered half";
  for (auto [a, b] : seen.seen) EXPECT_LE(b - a, 100) << a;  // chunks of 1600 / 16
  EXPECT_TRUE(seen.tile(0, 1600));
}

// The same for a reduction: the halves fold separately and combine in index order.
TEST(AlgorithmsAdaptive, AnUnsplittableReductionOffersHalfItsRestToAnIdleWorker) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  promptly::runtime rt(cfg);
  first_chunk_waits_for_help sync;
  bool helped = false;
  auto map = [&](long i) {
    if (i == 0) helped = sync.at_first();
    else if (i >= 800) sync.at_rest();
    return std::to_string(i % 10);
  };
  auto combine = std::plus<>{};
  promptly::detail::cancel_scope scope;
  const std::string digits = rt.run([&] {
    return promptly::detail::reduce_range_adaptive(0L, 1600L, promptly::detail::adaptive_splitter{0, 2}, false, std::string(),
                                                   map, combine, scope);
  });
  scope.finish("test");
  EXPECT_TRUE(helped) << "no other worker took the offered half";
  std::string expected;
  for (long i = 0; i < 1600; ++i) expected += std::to_string(i % 10);
  EXPECT_EQ(digits, expected);
}

TEST_P(Algorithms, LoopsWithoutAGrainCoverTheirRangeOnce) {
  for (long n : {0L, 1L, 2L, 7L, 1000L, 100'003L}) {
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
    pieces p;
    rt.run([&] {
      promptly::parallel_for(0L, n, [&](long i) { seen[static_cast<std::size_t>(i)]++; });
      promptly::parallel_for(promptly::index_range(0L, n), [&](promptly::index_range<long> r) { p.add(r.first(), r.last()); });
    });
    for (auto& s : seen) ASSERT_EQ(s, 1) << "n " << n;
    if (n > 0) EXPECT_TRUE(p.tile(0, n)) << "n " << n;
    // Index order is kept: a non-commutative combine.
    const std::string digits = rt.run([&] {
      return promptly::parallel_reduce(0L, std::min(n, 200L), std::string(), [](long i) { return std::to_string(i % 10); },
                                       std::plus<>{});
    });
    std::string expected;
    for (long i = 0; i < std::min(n, 200L); ++i) expected += std::to_string(i % 10);
    EXPECT_EQ(digits, expected);
  }
  std::vector<std::atomic<int>> cells(100 * 37);
  rt.run([&] {
    promptly::parallel_for(promptly::index_box(promptly::index_range(0, 100), promptly::index_range(0, 37)),
                           [&](const promptly::index_box<int, 2>& b) {
                             for (int i : b[0])
                               for (int j : b[1]) cells[static_cast<std::size_t>(i * 37 + j)]++;
                           });
  });
  for (auto& c : cells) ASSERT_EQ(c, 1);
}

// A piece that a thief took gets a fresh budget of `workers` splits, however deep it is; an
// undisturbed one halves its budget and stops at zero (Rayon's Splitter::try_split).
// A stop request that comes while a piece runs its chunks one after another skips the chunks
// left and says so: the loop throws cancelled, never returns with indices not run. The deque
// holds unrelated work, so the piece runs its chunks in turn (no lazy split), and no later
// piece of the loop would note the skip.
TEST(AlgorithmsAdaptive, AStopBetweenChunksIsReportedNotSilent) {
  promptly::runtime_config cfg;
  cfg.workers = 1;
  promptly::runtime rt(cfg);
  std::stop_source stop;
  promptly::detail::cancel_scope scope(stop.get_token());
  pieces seen;
  auto leaf = [&](long a, long b) {
    seen.add(a, b);
    if (a == 500) stop.request_stop();
  };
  rt.run([&] {
    promptly::task_group unrelated;
    unrelated.spawn([] {});  // stays in this worker's deque: nobody else runs
    promptly::detail::split_range_adaptive(0L, 1600L, promptly::detail::adaptive_splitter{0, 1}, false, leaf, scope);
    unrelated.wait();
  });
  ASSERT_FALSE(seen.tile(0, 1600)) << "the stop came before the end";
  EXPECT_THROW(scope.finish("parallel_for"), promptly::cancelled) << "chunks were skipped without a word";
  // The same for a reduction.
  std::stop_source stop_reduce;
  promptly::detail::cancel_scope reduce_scope(stop_reduce.get_token());
  long folded = 0;
  auto map = [&](long i) {
    if (i == 500) stop_reduce.request_stop();
    ++folded;
    return i;
  };
  auto plus = std::plus<>{};
  rt.run([&] {
    promptly::task_group unrelated;
    unrelated.spawn([] {});
    (void)promptly::detail::reduce_range_adaptive(0L, 1600L, promptly::detail::adaptive_splitter{0, 1}, false, 0L, map, plus,
                                                  reduce_scope);
    unrelated.wait();
  });
  ASSERT_LT(folded, 1600);
  EXPECT_THROW(reduce_scope.finish("parallel_reduce"), promptly::cancelled) << "chunks were skipped without a word";
}

TEST(AlgorithmsAdaptive, AStolenPieceGetsAFreshSplitBudget) {
  promptly::detail::adaptive_splitter deep{0, 4};
  EXPECT_FALSE(deep.try_split(false));
  EXPECT_TRUE(deep.try_split(true));
  EXPECT_EQ(deep.splits, 4u);
  promptly::detail::adaptive_splitter shallow{16, 4};
  EXPECT_TRUE(shallow.try_split(true));
  EXPECT_EQ(shallow.splits, 8u);
  EXPECT_TRUE(shallow.try_split(false));
  EXPECT_EQ(shallow.splits, 4u);
}
