// The dynamic priority API (the fairly prompt paper Sec. 5.3): orders built at run time,
// cycles and bad declarations rejected, rule TOUCH checked at run time with
// promptly::priority_inversion naming both priorities.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "promptly/typed.hpp"
#include "test_support.hpp"
#include "typed_support.hpp"

TEST(TypedDynamic, ParseLinearisesAPartialOrder) {
  auto order = promptly::dynamic_priority_order::parse("high > mid_a > low; high > mid_b > low\n alone");
  EXPECT_EQ(order.size(), 5u);
  EXPECT_EQ(order["high"].level(), 0u);
  EXPECT_EQ(order["mid_a"].level(), 1u);
  EXPECT_EQ(order["mid_b"].level(), 2u);  // mentioned after low, but low must wait for it
  EXPECT_EQ(order["low"].level(), 3u);
  EXPECT_EQ(order.at_level(4).name(), "alone");
  EXPECT_TRUE(order["high"].at_least_as_urgent_as(order["low"]));
  EXPECT_TRUE(order["low"].at_least_as_urgent_as(order["low"]));
  EXPECT_FALSE(order["mid_a"].at_least_as_urgent_as(order["mid_b"]));
  EXPECT_FALSE(order["mid_b"].at_least_as_urgent_as(order["mid_a"]));
  EXPECT_FALSE(order["low"].at_least_as_urgent_as(order["high"]));
  EXPECT_FALSE(order["alone"].at_least_as_urgent_as(order["low"]));
}

TEST(TypedDynamic, ConstructorFromNamesAndRelations) {
  promptly::dynamic_priority_order order({"ui", "log", "batch"}, {{"log", "batch"}, {"ui", "log"}});
  EXPECT_EQ(order["ui"].level(), 0u);
  EXPECT_EQ(order["batch"].level(), 2u);
  EXPECT_THROW((void)order["nope"], std::invalid_argument);
  EXPECT_THROW((void)order.at_level(3), std::out_of_range);
}

TEST(TypedDynamic, BadDeclarationsThrowNamingTheProblem) {
  EXPECT_NE(what_of([] { promptly::dynamic_priority_order::parse("a > b > c > a"); }).find("cycle: a > b > c > a"),
            std::string::npos);
  EXPECT_NE(what_of([] { promptly::dynamic_priority_order::parse("x > b; b > c; c > b"); }).find("cycle: b > c > b"),
            std::string::npos);
  EXPECT_NE(what_of([] { promptly::dynamic_priority_order::parse("a > a"); }).find("cycle: a > a"), std::string::npos);
  EXPECT_THROW(promptly::dynamic_priority_order::parse("a > > b"), std::invalid_argument);
  EXPECT_THROW(promptly::dynamic_priority_order::parse(""), std::invalid_argument);
  EXPECT_NE(what_of([] { promptly::dynamic_priority_order({"a", "b"}, {{"a", "c"}}); }).find("'c'"), std::string::npos);
  EXPECT_NE(what_of([] { promptly::dynamic_priority_order({"a", "a"}, {}); }).find("declared twice"), std::string::npos);
  std::string many;
  for (int i = 0; i < 65; ++i) many.append("p").append(std::to_string(i)).append(";");  // (+: GCC 12's false -Wstringop-overflow)
  EXPECT_THROW(promptly::dynamic_priority_order::parse(many), std::invalid_argument);
}

TEST(TypedDynamic, TouchRuleCheckedAtRunTime) {
  auto order = promptly::dynamic_priority_order::parse("high > mid_a > low; high > mid_b > low");
  const auto high = order["high"], mid_a = order["mid_a"], mid_b = order["mid_b"], low = order["low"];
  promptly::runtime rt(typed_config(4));

  // Allowed: low touches everything; a middle touches high; same priority.
  const int ok = order.run(rt, low, [&] {
    auto a = order.fcreate(mid_a, [&] {
      auto h = order.fcreate(high, [] { return 1; });
      return h.get() + 10;
    });
    auto b = order.fcreate(mid_b, [] { return 100; });
    auto l = order.fcreate(low, [] { return 1000; });
    return a.get() + b.get() + l.get();
  });
  EXPECT_EQ(ok, 1111);

  // Touching a less urgent priority.
  try {
    order.run(rt, high, [&] { return order.fcreate(low, [] { return 1; }).get(); });
    FAIL() << "expected promptly::priority_inversion";
  } catch (const promptly::priority_inversion& e) {
    EXPECT_EQ(e.touched(), "low");
    EXPECT_EQ(e.toucher(), "high");
    const std::string what = e.what();
    EXPECT_NE(what.find("touching a future at priority 'low' from code at priority 'high'"), std::string::npos) << what;
  }

  // Touching an unrelated priority of the partial order, both ways, even
  // though the linearisation puts mid_a above mid_b.
  try {
    order.run(rt, mid_a, [&] { order.fcreate(mid_b, [] {}).wait(); });
    FAIL() << "expected promptly::priority_inversion";
  } catch (const promptly::priority_inversion& e) {
    EXPECT_EQ(e.touched(), "mid_b");
    EXPECT_EQ(e.toucher(), "mid_a");
  }
  EXPECT_THROW(order.run(rt, mid_b, [&] { return order.fcreate(mid_a, [] { return 2; }).get(); }),
               promptly::priority_inversion);

  // From outside the runtime there is no toucher priority: not checked.
  EXPECT_EQ(order.submit(rt, low, [] { return 5; }).get(), 5);
}

TEST(TypedDynamic, CurrentAndLevelChecks) {
  auto order = promptly::dynamic_priority_order::parse("a > b > c");
  EXPECT_FALSE(order.current().has_value());  // not on a worker
  {
    promptly::runtime rt(typed_config(3));
    const std::string at_b = order.run(rt, order["b"], [&] { return order.current()->name(); });
    EXPECT_EQ(at_b, "b");
  }
  promptly::runtime small(typed_config(2));
  EXPECT_THROW(order.run(small, order["a"], [] {}), std::out_of_range);
  auto other = promptly::dynamic_priority_order::parse("a > b > c");
  promptly::runtime rt(typed_config(3));
  EXPECT_THROW(order.run(rt, other["a"], [] {}), std::invalid_argument);
}
