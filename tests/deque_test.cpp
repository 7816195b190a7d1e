// Chase-Lev deque: sequential semantics and a multi-threaded stress test
// in which every pushed item must be taken exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "promptly/detail/chase_lev_deque.hpp"
#include "test_support.hpp"

using promptly::detail::chase_lev_deque;

TEST(Deque, OwnerPopsLifoThiefStealsFifo) {
  chase_lev_deque<int*> d(4);
  std::vector<int> v(100);
  for (auto& x : v) d.push(&x);  // grows past the initial capacity
  EXPECT_EQ(d.steal(), &v[0]);
  EXPECT_EQ(d.steal(), &v[1]);
  EXPECT_EQ(d.pop(), &v[99]);
  EXPECT_EQ(d.pop(), &v[98]);
  for (int i = 97; i >= 2; --i) EXPECT_EQ(d.pop(), &v[i]);
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_EQ(d.steal(), nullptr);
  EXPECT_TRUE(d.empty());
}

TEST(Deque, EmptyPopThenPushWorks) {
  chase_lev_deque<int*> d(2);
  int a = 1;
  EXPECT_EQ(d.pop(), nullptr);
  d.push(&a);
  EXPECT_EQ(d.pop(), &a);
  EXPECT_EQ(d.pop(), nullptr);
}

// Owner pushes and pops in bursts while thieves steal; 10^7 operations in
// total (scaled down under TSan). Each item records who took it.
TEST(Deque, StressNoItemLostOrDuplicated) {
  const std::size_t items = scaled(5'000'000);
  std::vector<std::atomic<std::uint8_t>> taken(items);
  std::vector<std::size_t> ids(items);
  for (std::size_t i = 0; i < items; ++i) ids[i] = i;
  chase_lev_deque<std::size_t*> d(64);
  std::atomic<bool> done{false};
  std::atomic<std::size_t> stolen{0};
  auto take = [&](std::size_t* p) { taken[*p].fetch_add(1, std::memory_order_relaxed); };
  std::vector<std::thread> thieves;
  for (int t = 0; t < 2; ++t)
    thieves.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        if (auto* p = d.steal()) {
          take(p);
          stolen.fetch_add(1, std::memory_order_relaxed);
        }
      }
      while (auto* p = d.steal()) take(p);
    });
  std::size_t next = 0;
  std::uint64_t rng = 42;
  while (next < items) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t burst = 1 + (rng >> 60);
    for (std::size_t k = 0; k < burst && next < items; ++k) d.push(&ids[next++]);
    const std::size_t pops = (rng >> 58) & 3;
    for (std::size_t k = 0; k < pops; ++k)
      if (auto* p = d.pop()) take(p);
  }
  while (auto* p = d.pop()) take(p);
  done.store(true, std::memory_order_release);
  for (auto& t : thieves) t.join();
  std::size_t missing = 0, duplicated = 0;
  for (auto& c : taken) {
    missing += c.load() == 0;
    duplicated += c.load() > 1;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicated, 0u);
  RecordProperty("stolen", static_cast<int>(stolen.load()));
}
