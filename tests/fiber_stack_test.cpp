// Fiber stacks: a deep chain of futures each getting its predecessor must
// not overflow (inline runs are bounded by the stack headroom), an overflow
// is reported by name instead of a silent SIGSEGV, and faults that are no
// fiber overflow still reach the handler that was there before the runtime.
//
// Invariant of the chain tests: every future of the chain is created (and
// queued) before the last one is touched, so get() finds its predecessor
// unstarted and would run it inline, one nesting level per link.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <latch>
#include <vector>

#include "promptly/promptly.hpp"
#include "sched/fiber_stack.hpp"
#include "test_support.hpp"
#if PROMPTLY_UNDER_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace {

promptly::runtime_config with_workers(unsigned n) {
  promptly::runtime_config c;
  c.workers = n;
  return c;
}

// Builds a chain of `n` futures, link i returning link i-1's value plus 1,
// then touches the last one from the root task. The other workers are kept
// busy until the chain is built, so no thief runs links early and the root
// finds (almost) the whole chain unstarted; they join in for the touch.
long run_chain(promptly::runtime& rt, std::size_t n) {
  const unsigned others = rt.workers() - 1;
  return rt.run([n, others] {
    std::latch busy(others), release(1);
    std::vector<promptly::future<void>> blockers;
    for (unsigned i = 0; i < others; ++i)
      blockers.push_back(promptly::async([&] {
        busy.count_down();
        release.wait();
      }));
    busy.wait();  // every other worker is inside a blocker
    std::vector<promptly::future<long>> chain;
    chain.reserve(n);
    chain.push_back(promptly::async([] { return 0L; }));
    for (std::size_t i = 1; i < n; ++i)
      chain.push_back(promptly::async([prev = chain.back()] { return prev.get() + 1; }));
    release.count_down();
    const long last = chain.back().get();
    for (auto& b : blockers) b.get();
    // Newest first: each link's state then dies when its own handle goes, as
    // its successor (holding a copy) is already gone; oldest first would
    // free the whole chain recursively from the last handle.
    while (!chain.empty()) chain.pop_back();
    return last;
  });
}

class FiberStack : public ::testing::TestWithParam<unsigned> {};

TEST_P(FiberStack, ChainOf5000FuturesCompletes) {
  promptly::runtime rt(with_workers(GetParam()));
  EXPECT_EQ(run_chain(rt, 5000), 4999);
}

TEST_P(FiberStack, ChainOf100000FuturesCompletes) {
  promptly::runtime rt(with_workers(GetParam()));
  const std::size_t n = scaled(100000, 10);
  EXPECT_EQ(run_chain(rt, n), static_cast<long>(n) - 1);
}

INSTANTIATE_TEST_SUITE_P(Workers, FiberStack, ::testing::Values(1u, 2u));

// AddressSanitizer keeps shadow memory across munmap and mmap, so a fiber
// stack mapped where poisoned memory was (an ended fiber's stack, whose
// entry frames never return) must be unpoisoned when it is made: an
// uninstrumented frame on it (libstdc++'s steady_clock::now) would otherwise
// be reported as touching a redzone. The second stack lands where the first
// was (mmap reuses the hole); if it does not, the check is retried.
TEST(FiberStack, ANewStackStartsWithoutPoisonLeftWhereItIsMapped) {
#if PROMPTLY_UNDER_ASAN
  promptly::detail::fiber_stack record;
  promptly::detail::recorded_stack_allocator stacks(record, 256 * 1024);
  int reused = 0;
  for (int attempt = 0; attempt < 10 && reused < 3; ++attempt) {
    boost::context::stack_context first = stacks.allocate();
    char* const bottom = record.bottom;
    char* const top = record.top;
    __asan_poison_memory_region(bottom, static_cast<std::size_t>(top - bottom));
    stacks.deallocate(first);
    boost::context::stack_context second = stacks.allocate();
    if (record.bottom == bottom) {
      ++reused;
      EXPECT_EQ(__asan_region_is_poisoned(record.bottom, static_cast<std::size_t>(record.top - record.bottom)),
                nullptr);
    }
    stacks.deallocate(second);
  }
  EXPECT_GT(reused, 0) << "no stack was mapped where the previous one was";
#else
  GTEST_SKIP() << "only AddressSanitizer keeps shadow memory";
#endif
}

// About `kib` KiB of stack in 1 KiB frames; volatile so that the frames are
// neither merged nor turned into a loop, and indexed by a run-time value: a
// frame only ever touched at [0] is shrunk to a few bytes by Clang.
__attribute__((noinline)) long recurse_kib(int kib) {
  volatile char frame[1024];
  const std::size_t at = static_cast<std::size_t>(kib) % sizeof frame;
  frame[at] = 1;
  if (kib <= 1) return frame[at];
  return recurse_kib(kib - 1) + frame[at];
}

// The recursion the death tests overflow with is fine on an 8 MiB thread.
TEST(FiberStackOverflow, HalfAMebibyteFitsTheMainThread) { EXPECT_EQ(recurse_kib(512), 512); }

// The default 256 KiB fiber stack cannot hold it: the guard page fault is
// reported with the configured size, then the process aborts.
TEST(FiberStackDeathTest, OverflowIsReportedWithTheConfiguredSize) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        promptly::runtime rt(with_workers(1));
        rt.run([] { return recurse_kib(512); });
      },
      "promptly: fiber stack overflow \\(256 KiB\\); raise runtime_config::fiber_stack_bytes");
}

TEST(FiberStackDeathTest, OverflowReportsANonDefaultSize) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        promptly::runtime_config c = with_workers(2);
        c.fiber_stack_bytes = 64 * 1024;
        promptly::runtime rt(c);
        rt.run([] { return recurse_kib(128); });
      },
      "promptly: fiber stack overflow \\(64 KiB\\)");
}

// A fault that is no fiber overflow goes to the handler installed before
// the runtime (here the test's own), not to the overflow report.
extern "C" void test_segv_handler(int) {
  static const char msg[] = "the program's own SIGSEGV handler\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(3);
}

TEST(FiberStackDeathTest, OtherFaultsReachThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        struct sigaction sa {};
        sa.sa_handler = test_segv_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, nullptr);
        promptly::runtime rt(with_workers(1));
        // A page of our own that may not be touched: a plain fault, in no
        // fiber's guard page (and no null pointer, which UBSan would catch).
        void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        rt.run([page] { *static_cast<volatile int*>(page) = 1; });
      },
      ::testing::ExitedWithCode(3), "the program's own SIGSEGV handler");
}

}  // namespace
