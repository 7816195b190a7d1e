// Waiting when no fiber stack can be mapped: a join whose stolen branch
// still runs never returns early (parking falls back to blocking the
// worker's thread), and a program that parks more tasks than the address
// space allows completes, with one clear message, instead of crashing.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"
#include "sched/chaos.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using namespace std::chrono_literals;

namespace {

promptly::runtime_config two_workers() {
  promptly::runtime_config c;
  c.workers = 2;
  return c;
}

struct no_fiber_creation {
  no_fiber_creation() { promptly::detail::chaos::fail_fiber_creations(-1); }
  ~no_fiber_creation() { promptly::detail::chaos::fail_fiber_creations(0); }
};

}  // namespace

// f returns at once; g is stolen and runs until the joining worker has
// blocked (no fiber to park on). join must return only after g finished and
// must hand back g's result (a join that returned early let the thief write
// into a dead frame).
TEST(ParkingLimit, JoinWithAStolenBranchWaitsWhenParkingFails) {
  promptly::runtime rt(two_workers());
  watchdog guard(60s, "join under parking failure");
  for (int round = 0; round < 5; ++round) {
    std::atomic<bool> g_started{false}, g_finished{false};
    const std::uint64_t blocked_before = rt.stats().blocked_waits;
    no_fiber_creation fault;
    const auto [a, b, finished_first] = rt.run([&] {
      auto [x, y] = promptly::join(
          [&] {
            while (!g_started.load()) std::this_thread::yield();  // g is on the other worker
            return 1;
          },
          [&] {
            g_started = true;
            // Event: the joining worker blocked its thread (it could not park).
            while (rt.stats().blocked_waits == blocked_before) std::this_thread::yield();
            g_finished = true;
            return 2;
          });
      return std::tuple{x, y, g_finished.load()};
    });
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 2);
    EXPECT_TRUE(finished_first) << "join returned while its stolen branch was still running";
  }
  EXPECT_GE(rt.stats().blocked_waits, 5u);
}

// Futures and task groups wait the same way.
TEST(ParkingLimit, FutureAndTaskGroupWaitsFallBackToBlocking) {
  promptly::runtime rt(two_workers());
  watchdog guard(60s, "future and task_group waits under parking failure");
  no_fiber_creation fault;
  std::atomic<int> children{0};
  const long r = rt.run([&] {
    promptly::task_group tg;
    for (int i = 0; i < 50; ++i) tg.spawn([&] { children.fetch_add(1); });
    tg.wait();
    auto f = promptly::async(promptly::level{1}, [] { return 41L; });
    return f.get() + 1;
  });
  EXPECT_EQ(r, 42);
  EXPECT_EQ(children.load(), 50);
}

namespace {

std::size_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Fiber stacks and the heap share RLIMIT_AS: if the stacks took the whole
// margin, the next heap growth would throw bad_alloc (a machine-dependent
// outcome, seen on a fresh CI machine). So the heap's room is reserved
// before the limit is set: one arena, and a freed block kept as its top.
void reserve_heap_room() {
  mallopt(M_ARENA_MAX, 1);                // worker threads allocate from the reserved arena
  mallopt(M_MMAP_THRESHOLD, 32 << 20);    // blocks below 32 MiB come from that arena
  mallopt(M_TRIM_THRESHOLD, 1 << 30);     // a freed top is kept, not returned
  void* room = std::malloc(16u << 20);    // 2000 tasks need well under 16 MiB
  if (room == nullptr) std::_Exit(3);
  std::free(room);
}

// In a child process: 2000 tasks each park on one promise while the address
// space has room for far fewer fiber stacks. Every task must complete once
// the promise is set. Any exception ends the child with a message, never with
// a runtime destructor waiting for tasks blocked on a gate never opened.
void park_beyond_the_address_space_limit() {
  constexpr int tasks = 2000;
  reserve_heap_room();
  promptly::runtime rt(two_workers());
  std::atomic<int> waiting{0}, done{0};
  promptly::promise<int> gate;
  promptly::future<int> opened = gate.get_future();
  std::vector<promptly::future<void>> fs;
  fs.reserve(tasks);
  // 48 MiB more than now: room for about 150 stacks of 256 KiB plus the
  // bookkeeping, not for 2000.
  rlimit lim{};
  lim.rlim_cur = lim.rlim_max = address_space_bytes() + (48u << 20);
  if (setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(3);
  try {
    for (int i = 0; i < tasks; ++i)
      fs.push_back(rt.submit([&] {
        waiting.fetch_add(1);
        if (opened.get() == 7) done.fetch_add(1);
      }));
    // Event: both workers blocked (no stack left) or every task waiting.
    while (rt.stats().blocked_waits < 2 && waiting.load() < tasks) std::this_thread::yield();
    gate.set_value(7);
    for (auto& f : fs) f.get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception after %d tasks started: %s\n", waiting.load(), e.what());
    std::_Exit(5);
  }
  std::fprintf(stderr, "completed %d of %d, blocked waits %llu\n", done.load(), tasks,
               static_cast<unsigned long long>(rt.stats().blocked_waits));
  std::_Exit(done.load() == tasks && rt.stats().blocked_waits > 0 ? 0 : 4);
}

}  // namespace

TEST(ParkingLimitDeath, ParkingMoreTasksThanStacksFitCompletes) {
  if (under_asan || under_tsan) GTEST_SKIP() << "sanitizers reserve more address space than the limit allows";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(park_beyond_the_address_space_limit(), ::testing::ExitedWithCode(0),
              "cannot map another fiber stack(.|\n)*completed 2000 of 2000");
}
