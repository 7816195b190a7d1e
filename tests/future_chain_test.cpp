// Chains of futures of any length: `prev = async([prev] { return prev.get() + 1; })`
// repeated a million times (starting from a ready future), then the last one
// touched, from a task and from a thread outside the runtime, for plain and
// typed futures, with 1 and 2 workers; and the chain released afterwards,
// touched or never touched, on a fiber and on a plain thread.
//
// Invariants the tests rely on:
//  * With one worker, every link is created (and queued, unstarted) before
//    the last one is touched, so the touch meets the whole chain unstarted:
//    each get() would run its predecessor inline, one nesting per link;
//    get() runs inline only while the fiber's stack has room (fiber_stack.cpp).
//  * A link's task holds its closure, which holds the previous link's state:
//    dropping the last handle of a finished chain releases every state in
//    turn (last to first), one nested destructor per link unless releases
//    are iterative (destroy_released, fiber_stack.cpp). Nested, 20,000 links
//    overflow a 256 KiB fiber stack and about 500,000 a thread's 8 MiB.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <utility>

#include "promptly/promptly.hpp"
#include "promptly/typed.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

namespace pt = promptly::typed;

// A million links in Release; a hundred thousand under the sanitizers,
// where each link costs microseconds (their frames are no smaller, so that
// still overflowed every stack below).
long chain_length() { return (under_tsan || under_asan) ? 100'000 : 1'000'000; }

// Runs f on a new thread outside the runtime with a 512 KiB stack (glibc's
// default is 8 MiB, musl's 128 KiB), and waits for it: a touch from a plain
// thread, on a stack small enough that the chain's length overflowed it.
template <class F>
void on_small_stack_thread(F f) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 512 * 1024), 0);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, &attr,
      [](void* fn) -> void* {
        (*static_cast<F*>(fn))();
        return nullptr;
      },
      &f);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(rc, 0);
  pthread_join(thread, nullptr);
}

promptly::runtime_config with_workers(unsigned n, unsigned levels = 1) {
  promptly::runtime_config c;
  c.workers = n;
  c.levels = levels;
  return c;
}

promptly::future<long> ready_future(long v) {
  promptly::promise<long> p;
  p.set_value(v);
  return p.get_future();
}

// Inside a task: the chain of n links after a ready future holding 0. The
// last link's value is n.
promptly::future<long> build_chain(long n) {
  promptly::future<long> prev = ready_future(0);
  for (long i = 0; i < n; ++i) prev = promptly::async([prev] { return prev.get() + 1; });
  return prev;
}

class FutureChain : public ::testing::TestWithParam<unsigned> {};

// Built and touched by a task; the task's handle, the only one left, then
// releases the whole finished chain.
TEST_P(FutureChain, TouchedFromATaskAndDestroyedThere) {
  const long n = chain_length();
  watchdog guard(hang_guard, "a chain of futures touched from a task");
  promptly::runtime rt(with_workers(GetParam()));
  const long last = rt.run([n] {
    promptly::future<long> chain = build_chain(n);
    return chain.get();
  });
  EXPECT_EQ(last, n);
}

// Built by a task and touched by a thread that is no worker: it blocks
// while the workers run the chain, then releases it (the last release may
// also be a worker's, when the last link's task lets go of its state after
// the touch returned).
TEST_P(FutureChain, TouchedFromOutsideTheRuntime) {
  const long n = chain_length();
  watchdog guard(hang_guard, "a chain of futures touched from outside the runtime");
  promptly::runtime rt(with_workers(GetParam()));
  promptly::future<long> chain = rt.run([n] { return build_chain(n); });
  on_small_stack_thread([&] {
    EXPECT_EQ(chain.get(), n);
    chain = {};
  });
}

// Never touched but by its own links: the runtime's shutdown waits for the
// unrun chain to finish; then a thread outside releases the finished chain,
// with the runtime gone.
TEST_P(FutureChain, NeverTouchedRunsAtShutdownAndIsDestroyedAfter) {
  const long n = chain_length();
  watchdog guard(hang_guard, "an untouched chain of futures at runtime shutdown");
  promptly::future<long> chain;
  {
    promptly::runtime rt(with_workers(GetParam()));
    chain = rt.run([n] { return build_chain(n); });
  }
  ASSERT_TRUE(chain.is_ready());
  on_small_stack_thread([&] { chain = {}; });
}

// Links that capture their predecessor but never touch it: every link runs
// on its own, in any order (newest first on one worker), and the last one to
// finish sets a promise the task waits on. Releasing the finished chain from
// the task then releases every state in turn.
TEST_P(FutureChain, CapturedButNeverTouchedIsDestroyedFromATask) {
  const long n = chain_length();
  watchdog guard(hang_guard, "a chain of captured, untouched futures");
  promptly::runtime rt(with_workers(GetParam()));
  const long finished = rt.run([n] {
    std::atomic<long> ran{0};
    promptly::promise<void> all_ran;
    promptly::future<void> all_ran_future = all_ran.get_future();
    promptly::future<long> prev = ready_future(0);
    for (long i = 0; i < n; ++i)
      prev = promptly::async([prev, n, &ran, &all_ran] {
        if (ran.fetch_add(1) + 1 == n) all_ran.set_value();
        return 1L;
      });
    all_ran_future.get();  // every link has finished; none was touched
    return ran.load();     // `prev` goes here, releasing the chain on this task's stack
  });
  EXPECT_EQ(finished, n);
}

// Counts its destructions (moved-from copies do not count).
struct counted {
  std::atomic<long>* count;
  explicit counted(std::atomic<long>& c) noexcept : count(&c) {}
  counted(counted&& o) noexcept : count(std::exchange(o.count, nullptr)) {}
  counted(const counted&) = delete;
  ~counted() {
    if (count != nullptr) count->fetch_add(1);
  }
};

// Waits for `until` when destroyed, so the release that destroys it parks.
struct parks_when_destroyed {
  promptly::future<void> until;
  parks_when_destroyed() = default;
  parks_when_destroyed(parks_when_destroyed&&) noexcept = default;  // leaves `until` empty
  parks_when_destroyed(const parks_when_destroyed&) = delete;
  ~parks_when_destroyed() {
    if (until.valid()) until.wait();
  }
};

// A link's body; members are destroyed bottom up: `prev` first (its state
// joins the releasing fiber's queue), then the parker parks with the queue
// still holding it.
struct link_body {
  parks_when_destroyed parker;
  counted mark;
  promptly::future<long> prev;
  long operator()() const { return prev.get() + 1; }
};

// Releasing a chain, a destructor parks; while it is parked, another task
// on the same worker releases a chain of its own, which must be released
// at once (not left to the parked fiber's queue), and the parked release
// then finishes its own chain after it resumes.
constexpr long parking_chain_length = 1000;

TEST(FutureChainRelease, DestructorThatParksKeepsItsQueueToItself) {
  constexpr long n = parking_chain_length;
  watchdog guard(hang_guard, "a release that parks inside a chain");
  promptly::runtime rt(with_workers(1));
  const auto [other_released_at_once, own_released] = rt.run([] {
    std::atomic<long> own{0}, other{0};
    promptly::promise<void> resume;
    promptly::future<long> chain = ready_future(0);
    for (long i = 0; i < n; ++i) {
      parks_when_destroyed parker;
      if (i == n / 2) parker.until = resume.get_future();
      chain = promptly::async(link_body{std::move(parker), counted(own), chain});
    }
    EXPECT_EQ(chain.get(), parking_chain_length);
    // Runs when the release below parks (one worker: it waits on the deque).
    promptly::future<bool> other_task = promptly::async([&other, &resume] {
      promptly::future<long> mine = ready_future(0);
      for (long i = 0; i < n; ++i)
        mine = promptly::async(link_body{parks_when_destroyed{}, counted(other), mine});
      const bool ran = mine.get() == n;
      mine = {};
      const bool released = other.load() == n;
      resume.set_value();
      return ran && released;
    });
    chain = {};  // parks halfway down the chain until the other task resumes it
    return std::pair{other_task.get(), own.load()};
  });
  EXPECT_TRUE(other_released_at_once);
  EXPECT_EQ(own_released, n);
}

// Typed futures: the same chain with fcreate and ctx::touch at one priority.
struct only {};
using one_order = promptly::priority_order<promptly::chain<only>>;
using only_ctx = pt::ctx<one_order, only>;

pt::future<long, only> build_typed_chain(const only_ctx& c, long n) {
  pt::future<long, only> prev = pt::unsafe_future_cast<only>(ready_future(0));
  for (long i = 0; i < n; ++i)
    prev = pt::fcreate<only>(c, [prev](only_ctx inner) { return inner.touch(prev) + 1; });
  return prev;
}

TEST_P(FutureChain, TypedTouchedFromATask) {
  const long n = chain_length();
  watchdog guard(hang_guard, "a typed chain of futures touched from a task");
  promptly::runtime rt(with_workers(GetParam()));
  const long last = pt::run<one_order, only>(rt, [n](only_ctx c) { return c.touch(build_typed_chain(c, n)); });
  EXPECT_EQ(last, n);
}

TEST_P(FutureChain, TypedTouchedFromOutsideTheRuntime) {
  const long n = chain_length();
  watchdog guard(hang_guard, "a typed chain of futures touched from outside the runtime");
  promptly::runtime rt(with_workers(GetParam()));
  promptly::future<long> chain =
      pt::run<one_order, only>(rt, [n](only_ctx c) { return std::move(build_typed_chain(c, n)).untyped(); });
  on_small_stack_thread([&] {
    EXPECT_EQ(chain.get(), n);
    chain = {};
  });
}

INSTANTIATE_TEST_SUITE_P(Workers, FutureChain, ::testing::Values(1u, 2u),
                         [](const ::testing::TestParamInfo<unsigned>& i) { return std::to_string(i.param) + "Workers"; });

}  // namespace
