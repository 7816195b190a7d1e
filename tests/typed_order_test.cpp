// Typed priority orders: linearisation by topological sort, the reflexive
// transitive "at least as urgent" relation, names, a partial order with two
// incomparable middle priorities at run time, the ctx conversion rule for
// command functions, and the level-count check of typed::run.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "promptly/typed.hpp"
#include "test_support.hpp"
#include "typed_support.hpp"

namespace {

namespace pt = promptly::typed;
using promptly::before;
using promptly::chain;

// A diamond: high above two unrelated middles, both above low (the fairly prompt paper Sec. 2.1).
struct high {};
struct mid_a {};
struct mid_b {};
struct low {
  static constexpr std::string_view name = "background";
};
using diamond = promptly::priority_order<before<high, mid_a>, before<high, mid_b>, before<mid_a, low>, before<mid_b, low>>;
template <class P>
using dctx = pt::ctx<diamond, P>;

static_assert(diamond::size == 4);
static_assert(diamond::level_of<high> == 0 && diamond::level_of<mid_a> == 1 && diamond::level_of<mid_b> == 2 &&
              diamond::level_of<low> == 3);
static_assert(diamond::at_least_as_urgent<high, low> && diamond::at_least_as_urgent<high, mid_b>);
static_assert(diamond::at_least_as_urgent<mid_a, mid_a>, "reflexive");
static_assert(!diamond::at_least_as_urgent<mid_a, mid_b> && !diamond::at_least_as_urgent<mid_b, mid_a>,
              "the middles are unrelated");
static_assert(!diamond::at_least_as_urgent<low, high> && !diamond::at_least_as_urgent<mid_a, high>);
static_assert(std::is_same_v<diamond::priority_at_level<3>, low>);
static_assert(diamond::contains<mid_b> && !diamond::contains<int>);

// Relations declared out of order, transitively implied ones, repeats.
struct p0 {};
struct p1 {};
struct p2 {};
struct p3 {};
struct alone {};
using scrambled = promptly::priority_order<before<p2, p3>, before<p1, p2>, before<p0, p1>, before<p1, p2>, chain<alone>>;
static_assert(scrambled::level_of<p0> == 0 && scrambled::level_of<p1> == 1 && scrambled::level_of<p2> == 2 &&
              scrambled::level_of<p3> == 3);
static_assert(scrambled::level_of<alone> == 4, "an unrelated priority is placed after the ready ones declared first");
static_assert(scrambled::at_least_as_urgent<p0, p3>, "transitive");
static_assert(!scrambled::at_least_as_urgent<alone, p3> && !scrambled::at_least_as_urgent<p0, alone>);

// A total order keeps its declaration order.
using total = promptly::priority_order<chain<p3, p1, p0, p2>>;
static_assert(total::level_of<p3> == 0 && total::level_of<p1> == 1 && total::level_of<p0> == 2 && total::level_of<p2> == 3);

// Command functions: a ctx converts only towards a more (or equally) urgent
// priority, never to a less urgent or unrelated one (the futures-and-state paper, Sec. 4.2).
static_assert(std::is_convertible_v<dctx<low>, dctx<high>>);
static_assert(std::is_convertible_v<dctx<low>, dctx<mid_a>>);
static_assert(!std::is_convertible_v<dctx<high>, dctx<low>>);
static_assert(!std::is_convertible_v<dctx<mid_a>, dctx<mid_b>>);
static_assert(!std::is_constructible_v<dctx<high>>, "only the library makes a ctx out of nothing");

// A command declared at mid_a: callable from mid_a and from low, at the caller's level.
unsigned command_at_mid_a(dctx<mid_a>) { return promptly::current_level(); }

}  // namespace

TEST(TypedOrder, Names) {
  EXPECT_EQ(diamond::name_of<high>, "high");
  EXPECT_EQ(diamond::name_of<low>, "background");
  EXPECT_EQ(diamond::name_of_level(2), "mid_b");
  EXPECT_EQ(dctx<mid_a>::name(), "mid_a");
  EXPECT_THROW(diamond::name_of_level(4), std::out_of_range);
}

// The diamond at run time: each priority's tasks run at its level; low
// touches both middles, each middle touches high.
TEST(TypedOrder, PartialOrderWithIncomparableMiddles) {
  promptly::runtime rt(typed_config(4));
  const int rounds = under_tsan ? 20 : 200;
  std::atomic<int> wrong_level{0};
  auto check_level = [&](unsigned expected) {
    if (promptly::current_level() != expected) wrong_level.fetch_add(1);
  };
  const long total = pt::run<diamond, low>(rt, [&](dctx<low> c) {
    check_level(3);
    long sum = 0;
    for (int i = 0; i < rounds; ++i) {
      auto top = pt::fcreate<high>(c, [&](dctx<high>) {
        check_level(0);
        return 1L;
      });
      auto a = pt::fcreate<mid_a>(c, [&, top](dctx<mid_a> c) {
        check_level(1);
        return c.touch(top) + 10;
      });
      auto b = pt::fcreate<mid_b>(c, [&, top](dctx<mid_b> c) {
        check_level(2);
        return top.get(c) + 100;
      });
      sum += c.touch(a) + c.touch(b) + c.touch(top);
    }
    return sum;
  });
  EXPECT_EQ(total, rounds * 113L);  // (1 + 10) + (1 + 100) + 1
  EXPECT_EQ(wrong_level.load(), 0);
}

TEST(TypedOrder, CommandFunctionRunsAtCallersLevel) {
  promptly::runtime rt(typed_config(4));
  const unsigned at_mid_a = pt::run<diamond, mid_a>(rt, [](dctx<mid_a> c) { return command_at_mid_a(c); });
  const unsigned at_low = pt::run<diamond, low>(rt, [](dctx<low> c) { return command_at_mid_a(c); });
  EXPECT_EQ(at_mid_a, 1u);
  EXPECT_EQ(at_low, 3u);
}

TEST(TypedOrder, RunChecksTheRuntimeHasEnoughLevels) {
  promptly::runtime rt(typed_config(3));
  try {
    pt::run<diamond, high>(rt, [](dctx<high>) {});
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("declares 4 priorities but the runtime has 3 levels"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((pt::submit<diamond, low>(rt, [] { return 1; })), std::out_of_range);
}

TEST(TypedOrder, SubmitFromOutsideAndBodiesWithoutCtx) {
  promptly::runtime rt(typed_config(4));
  auto f = pt::submit<diamond, mid_b>(rt, [](dctx<mid_b> c, int x) { return x + static_cast<int>(c.level); }, 40);
  EXPECT_EQ(f.get(), 42);
  const int without_ctx = pt::run<diamond, high>(rt, [](int x) { return x + static_cast<int>(promptly::current_level()); }, 7);
  EXPECT_EQ(without_ctx, 7);
}
