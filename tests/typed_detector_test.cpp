// The run-time inversion detector (runtime_config::detect_inversions):
// counts touches of less urgent futures that the type system cannot see
// (plain levels, unsafe casts), with the two levels involved; counts nothing
// for correct touches or when disabled.
#include <gtest/gtest.h>

#include "promptly/typed.hpp"
#include "test_support.hpp"
#include "typed_support.hpp"

TEST(TypedDetector, CountsPlainLevelInversionsWithBothLevels) {
  promptly::runtime rt(typed_config(3, true));
  EXPECT_TRUE(rt.inversions().enabled);
  EXPECT_EQ(rt.inversions().total, 0u);
  const int rounds = 3;
  rt.run(promptly::level{0}, [] {
    for (int i = 0; i < rounds; ++i) promptly::async(promptly::level{2}, [] { return 1; }).get();  // 0 waits on 2
  });
  rt.run(promptly::level{1}, [] { promptly::async(promptly::level{2}, [] {}).wait(); });         // 1 waits on 2
  const auto s = rt.inversions();
  EXPECT_EQ(s.total, 4u);
  ASSERT_EQ(s.pairs.size(), 2u);
  EXPECT_EQ(s.pairs[0].toucher_level, 0u);
  EXPECT_EQ(s.pairs[0].touched_level, 2u);
  EXPECT_EQ(s.pairs[0].count, 3u);
  EXPECT_EQ(s.pairs[1].toucher_level, 1u);
  EXPECT_EQ(s.pairs[1].touched_level, 2u);
  EXPECT_EQ(s.pairs[1].count, 1u);
}

TEST(TypedDetector, CorrectTouchesCountNothing) {
  promptly::runtime rt(typed_config(3, true));
  rt.run(promptly::level{2}, [] {
    promptly::async(promptly::level{0}, [] {}).get();  // more urgent: fine
    promptly::async(promptly::level{2}, [] {}).get();  // same level: fine
    promptly::async([] {}).get();
  });
  rt.submit(promptly::level{2}, [] {}).get();  // from outside: no toucher level
  EXPECT_EQ(rt.inversions().total, 0u);
}

TEST(TypedDetector, DisabledCountsNothing) {
  promptly::runtime rt(typed_config(3, false));
  rt.run(promptly::level{0}, [] { promptly::async(promptly::level{2}, [] {}).get(); });
  EXPECT_FALSE(rt.inversions().enabled);
  EXPECT_EQ(rt.inversions().total, 0u);
}

namespace {
struct high {};
struct low {};
using order = promptly::priority_order<promptly::chain<high, low>>;
namespace pt = promptly::typed;
}  // namespace

// An unsafe cast fools the type system; the detector sees the touch.
TEST(TypedDetector, SeesThroughAnUnsafeCast) {
  promptly::runtime rt(typed_config(3, true));
  const int v = pt::run<order, high>(rt, [](pt::ctx<order, high> c) {
    // Claims priority high for a task that runs at level 2.
    pt::future<int, high> lie = pt::unsafe_future_cast<high>(promptly::async(promptly::level{2}, [] { return 7; }));
    return c.touch(lie);  // compiles: high may touch high
  });
  EXPECT_EQ(v, 7);
  const auto s = rt.inversions();
  EXPECT_EQ(s.total, 1u);
  ASSERT_EQ(s.pairs.size(), 1u);
  EXPECT_EQ(s.pairs[0].toucher_level, order::level_of<high>);
  EXPECT_EQ(s.pairs[0].touched_level, 2u);
  EXPECT_EQ(order::name_of_level(s.pairs[0].toucher_level), "high");
}
