// Cancellation (cancellation.hpp): task_group::cancel from inside and outside the group, a
// group's token given to nested groups and to the algorithms, wait()'s status, stop tokens
// that cut parallel_for / parallel_reduce / the sorts / the scans short (reported as
// promptly::cancelled, a sort's range left a permutation of its input), and exceptions that
// stop the rest of a range.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <string>
#include <vector>

#include "promptly/promptly.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

promptly::runtime_config workers(unsigned n) {
  promptly::runtime_config c;
  c.workers = n;
  return c;
}

std::vector<std::uint32_t> shuffled(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint32_t> v(n);
  std::mt19937 gen(seed);
  for (auto& x : v) x = static_cast<std::uint32_t>(gen() % 1000);
  return v;
}

template <class T>
bool same_multiset(std::vector<T> a, std::vector<T> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

// A sort whose token was requested before it started throws cancelled and leaves a permutation;
// the same range then sorts with an idle token.
template <class T>
void expect_cancelled_sorts_leave_a_permutation(promptly::runtime& rt, const std::vector<T>& input) {
  for (bool stable : {false, true}) {
    auto v = input;
    std::stop_source stop;
    stop.request_stop();
    EXPECT_THROW(rt.run([&] {
      if (stable)
        promptly::parallel_stable_sort(stop.get_token(), v);
      else
        promptly::parallel_sort(stop.get_token(), v);
    }),
                 promptly::cancelled);
    EXPECT_TRUE(same_multiset(v, input)) << "stable " << stable;
    std::stop_source idle;
    rt.run([&] { promptly::parallel_sort(idle.get_token(), v); });
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  }
}

}  // namespace

class Cancel : public ::testing::TestWithParam<unsigned> {
 protected:
  promptly::runtime rt{workers(GetParam())};
};

// ---- task_group ----

TEST_P(Cancel, AGroupThatIsNotCancelledReportsComplete) {
  std::atomic<int> ran{0};
  const auto status = rt.run([&] {
    promptly::task_group tg;
    for (int i = 0; i < 20; ++i) tg.spawn([&] { ran++; });
    return tg.wait();
  });
  EXPECT_EQ(status, promptly::task_group_status::complete);
  EXPECT_EQ(ran.load(), 20);
}

TEST_P(Cancel, CancelFromInsideSkipsChildrenNotStartedAndWaitSaysSo) {
  std::atomic<int> ran{0};
  const auto [status, reuse] = rt.run([&] {
    promptly::task_group tg;
    tg.spawn([&] {
      tg.cancel();
      EXPECT_TRUE(tg.is_canceling());
      for (int i = 0; i < 100; ++i) tg.spawn([&] { ran++; });  // spawned after the cancel: all skipped
    });
    const auto s = tg.wait();
    // wait() clears the group's cancellation: it can be reused.
    tg.spawn([&] { ran += 1000; });
    return std::pair{s, tg.wait()};
  });
  EXPECT_EQ(status, promptly::task_group_status::canceled);
  EXPECT_EQ(reuse, promptly::task_group_status::complete);
  EXPECT_EQ(ran.load(), 1000);
}

TEST_P(Cancel, CancelFromAnotherThreadThroughTheGroupsToken) {
  watchdog guard(hang_guard, "cancel from outside");
  std::stop_source stop;
  promptly::promise<void> cancelled_outside;
  std::atomic<bool> child_waiting{false};
  std::atomic<int> ran{0};
  auto done = rt.submit([&] {
    promptly::task_group tg(stop.get_token());
    tg.spawn([&] {
      child_waiting = true;
      cancelled_outside.get_future().get();  // parks until the main thread cancelled
      for (int i = 0; i < 50; ++i) tg.spawn([&] { ran++; });
    });
    return tg.wait();
  });
  ASSERT_TRUE(wait_until([&] { return child_waiting.load(); }));
  stop.request_stop();
  cancelled_outside.set_value();
  EXPECT_EQ(done.get(), promptly::task_group_status::canceled);
  EXPECT_EQ(ran.load(), 0);
}

TEST_P(Cancel, CancellingTheOuterGroupCancelsANestedGroupAndItsAlgorithms) {
  std::atomic<int> inner_ran{0};
  std::atomic<bool> loop_cancelled{false};
  const auto [outer_status, inner_status] = rt.run([&] {
    promptly::task_group outer;
    promptly::task_group_status inner_status{};
    outer.spawn([&] {
      promptly::task_group inner(outer.get_token());
      outer.cancel();  // the inner group's children, spawned below, never start
      for (int i = 0; i < 30; ++i) inner.spawn([&] { inner_ran++; });
      inner_status = inner.wait();
      try {
        promptly::parallel_for(inner.get_token(), 0, 1000, 1, [&](int) { inner_ran++; });
      } catch (const promptly::cancelled&) {
        loop_cancelled = true;
      }
    });
    return std::pair{outer.wait(), inner_status};
  });
  EXPECT_EQ(outer_status, promptly::task_group_status::canceled);
  EXPECT_EQ(inner_status, promptly::task_group_status::canceled);
  EXPECT_EQ(inner_ran.load(), 0);
  EXPECT_TRUE(loop_cancelled.load());
}

TEST_P(Cancel, ATokenTakenBeforeTheCancelIsRequestedByIt) {
  const bool requested = rt.run([] {
    promptly::task_group tg;
    std::stop_token t = tg.get_token();
    const bool before = t.stop_requested();
    tg.cancel();
    tg.wait();
    return !before && t.stop_requested();
  });
  EXPECT_TRUE(requested);
}

TEST_P(Cancel, CancelsFromAnotherThreadRacingWithWaitAndReuse) {
  // wait() replaces a requested token source while another thread may be cancelling through it.
  std::atomic<bool> stop{false};
  std::atomic<int> cancels{0};
  rt.run([&] {
    promptly::task_group tg;
    std::thread canceller([&] {
      while (!stop.load()) {
        tg.cancel();
        cancels++;
      }
    });
    const int rounds = under_tsan || under_asan ? 200 : 2000;
    for (int i = 0; i < rounds || cancels.load() == 0; ++i) {
      std::stop_token t = tg.get_token();
      tg.spawn([t] { (void)t.stop_requested(); });
      (void)tg.wait();
    }
    stop = true;
    canceller.join();
    (void)tg.wait();
  });
  EXPECT_GT(cancels.load(), 0);
}

// ---- algorithms ----

TEST_P(Cancel, AStopRequestMidLoopSkipsTheRestAndThrowsCancelled) {
  std::stop_source stop;
  std::atomic<int> ran{0};
  const std::string what = what_of<promptly::cancelled>([&] {
    rt.run([&] {
      promptly::parallel_for(stop.get_token(), 0, 10'000, 1, [&](int i) {
        ran++;
        if (i == 0) stop.request_stop();
      });
    });
  });
  EXPECT_NE(what.find("parallel_for"), std::string::npos) << what;
  if (GetParam() == 1) {
    EXPECT_EQ(ran.load(), 1);  // index 0 is the first piece one worker runs
  }
  EXPECT_LT(ran.load(), 10'000);
  // A stop requested before the call: nothing runs.
  ran = 0;
  EXPECT_THROW(rt.run([&] { promptly::parallel_for(stop.get_token(), 0, 100, [&](int) { ran++; }); }), promptly::cancelled);
  EXPECT_EQ(ran.load(), 0);
  // A token never requested changes nothing.
  std::stop_source idle;
  EXPECT_EQ(rt.run([&] {
              return promptly::parallel_reduce(idle.get_token(), 0, 1000, 0L, [](int i) { return long{i}; }, std::plus<>{});
            }),
            499'500L);
}

TEST_P(Cancel, ReduceStopsOnTheFirstExceptionAndOnAStop) {
  std::atomic<int> mapped{0};
  EXPECT_THROW((void)rt.run([&] {
    return promptly::parallel_reduce(0, 10'000, 1, 0L, [&](int i) {
      mapped++;
      if (i == 0) throw std::domain_error("map");
      return long{i};
    }, std::plus<>{});
  }),
               std::domain_error);
  if (GetParam() == 1) {
    EXPECT_EQ(mapped.load(), 1);
  }
  std::stop_source stop;
  stop.request_stop();
  EXPECT_THROW((void)rt.run([&] {
    return promptly::parallel_reduce(stop.get_token(), 0, 10, 1, 0, [](int i) { return i; }, std::plus<>{});
  }),
               promptly::cancelled);
}

TEST_P(Cancel, CancellingASortLeavesAPermutation) {
  const std::size_t n = under_tsan || under_asan ? 10'000 : 60'000;
  for (bool stable : {false, true}) {
    for (int when : {0, 1000, 20'000}) {
      const auto input = shuffled(n, static_cast<std::uint32_t>(when) + 7);
      auto v = input;
      std::stop_source stop;
      std::atomic<int> calls{0};
      auto less = [&](std::uint32_t a, std::uint32_t b) {
        if (calls.fetch_add(1, std::memory_order_relaxed) == when) stop.request_stop();
        return a < b;
      };
      bool cancelled = false;
      try {
        rt.run([&] {
          if (stable)
            promptly::parallel_stable_sort(stop.get_token(), v, less);
          else
            promptly::parallel_sort(stop.get_token(), v, less);
        });
      } catch (const promptly::cancelled&) {
        cancelled = true;
      }
      EXPECT_TRUE(cancelled) << "stable " << stable << " stop at comparison " << when;
      EXPECT_TRUE(same_multiset(v, input)) << "stable " << stable << " stop at comparison " << when;
    }
  }
}

TEST_P(Cancel, ACancelledNothrowSortStillLeavesAPermutation) {
  // std::ranges::less on integers is noexcept: the token alone makes the sort check it.
  const std::size_t n = under_tsan || under_asan ? 10'000 : 60'000;
  expect_cancelled_sorts_leave_a_permutation(rt, shuffled(n, 99));
  // Strings in the standard order take the key-prefix path (its own stop between the record
  // sort and the moves back is tested in algorithms_test.cpp, ACancelledKeyPrefixSort...).
  std::vector<std::string> strings(n);
  for (std::size_t i = 0; i < n; ++i) strings[i] = std::to_string((i * 2654435761u) % 1'000'003) + "-key";
  expect_cancelled_sorts_leave_a_permutation(rt, strings);
}

TEST_P(Cancel, AThrowingComparatorWithATokenRethrowsItsOwnException) {
  const auto input = shuffled(50'000, 3);
  auto v = input;
  std::stop_source stop;
  std::atomic<int> calls{0};
  auto less = [&](std::uint32_t a, std::uint32_t b) {
    if (calls.fetch_add(1, std::memory_order_relaxed) == 5000) throw std::length_error("comparator");
    return a < b;
  };
  EXPECT_EQ(what_of<std::length_error>([&] { rt.run([&] { promptly::parallel_sort(stop.get_token(), v, less); }); }),
            "comparator");
  EXPECT_TRUE(same_multiset(v, input));
}

TEST_P(Cancel, ACancelledScanThrowsCancelled) {
  const std::size_t n = 8 * promptly::detail::scan_min_block;
  std::vector<long> in(n, 1), out(n, 0);
  std::stop_source stop;
  auto op = [&](long a, long b) {
    stop.request_stop();
    return a + b;
  };
  EXPECT_THROW(rt.run([&] { promptly::parallel_inclusive_scan(stop.get_token(), in.begin(), in.end(), out.begin(), op); }),
               promptly::cancelled);
  std::stop_source idle;
  rt.run([&] { promptly::parallel_exclusive_scan(idle.get_token(), in, out.begin(), 0L); });
  EXPECT_EQ(out.back(), static_cast<long>(n - 1));
}

INSTANTIATE_TEST_SUITE_P(Workers, Cancel, ::testing::Values(1u, 2u, 4u));
