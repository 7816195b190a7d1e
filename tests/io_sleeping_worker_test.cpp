// A worker with nothing to do sleeps in the reactor's epoll set itself
// (src/io/README.md, "A sleeping worker waits in epoll"): readiness wakes it,
// not the reactor thread, and the scheduler's notifications reach it through
// a doorbell instead of its futex. These tests attack the protocol's three
// edges: a notification racing the worker's way into epoll_wait, readiness
// taken by the worker instead of the reactor, and descriptors closed (their
// states retired by the reactor) while the worker blocks in epoll_wait.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string_view>

#include "io_test_support.hpp"
#include "sched/chaos.hpp"

using namespace io_test;

namespace {

// The backend under test runs worker sleeps (epoll); io_uring has none.
bool epoll_backend() {
  start_reactor();
  return std::string_view(io::stats().backend) == "epoll";
}

// A worker whose epoll wait fetched one of the reactor's own descriptors
// (the eventfd that a close rings) leaves the wait to the reactor and
// sleeps on its futex (src/io/reactor.cpp, wait_from_sleeping_worker): a
// task then sends it round its loop again. Each try's deadline only turns a
// futex sleep into that nudge.
bool a_worker_sleeps_in_epoll(promptly::runtime& rt) {
  for (int attempt = 0; attempt < 30; ++attempt) {
    if (wait_until([] { return io::stats().worker_sleeping; }, 1s)) return true;
    rt.submit([] {}).get();
  }
  return false;
}

}  // namespace

// The only worker sleeps in epoll_wait: work submitted from another thread
// must still wake it (its notifier rings the doorbell; a futex wake would
// leave it asleep). Half the rounds wait until it sleeps there, the other
// half race the submission against its way in.
TEST(IoSleepingWorker, IsWokenForWorkSubmittedFromAnotherThread) {
  if (!epoll_backend()) GTEST_SKIP() << "workers sleep in the epoll backend only";
  promptly::runtime rt{workers(1)};
  const int rounds = static_cast<int>(scaled(400, 4));
  const std::uint64_t sleeps_before = io::stats().worker_sleeps;
  within(120s, "IsWokenForWorkSubmittedFromAnotherThread", [&] {
    for (int i = 0; i < rounds; ++i) {
      if (i % 2 == 0) ASSERT_TRUE(a_worker_sleeps_in_epoll(rt)) << "round " << i;
      EXPECT_EQ(rt.submit([i] { return i; }).get(), i);
    }
  });
  // Each waiting round after the first saw a new sleep (the first may have
  // seen one that began before sleeps_before was read).
  EXPECT_GE(io::stats().worker_sleeps - sleeps_before, static_cast<std::uint64_t>(rounds / 2 - 1));
}

// A doorbell rung while the sleeping worker is between its last check of
// its state and its epoll_wait (a chaos stall holds it there) finds no
// blocked waiter, and the reactor thread, blocked in the same set, may
// fetch it: it must ring it again, or the worker sleeps through its
// notification (a hang here).
TEST(IoSleepingWorker, ADoorbellTheReactorFetchesIsPassedOn) {
  namespace chaos = promptly::detail::chaos;
  if (!epoll_backend()) GTEST_SKIP() << "workers sleep in the epoll backend only";
  promptly::runtime rt{workers(1)};
  struct stalls_off {
    ~stalls_off() { chaos::stall_worker_sleeps(0); }
  } off;
  const int rounds = static_cast<int>(scaled(100, 4));
  const std::uint64_t wakeups_before = io::stats().wakeups;
  within(120s, "ADoorbellTheReactorFetchesIsPassedOn", [&] {
    for (int i = 0; i < rounds; ++i) {
      // The worker's next sleep stalls: the one after this round's task (a
      // budget set while it already blocked in epoll_wait would wait for an
      // event). The next round's submission races that stall.
      chaos::stall_worker_sleeps(1);
      EXPECT_EQ(rt.submit([i] { return i; }).get(), i);
      // The worker is past its state check, stalled before epoll_wait.
      ASSERT_TRUE(wait_until([] { return chaos::stalled_worker_sleeps.load() == 0; }, 30s)) << "round " << i;
    }
  });
  const std::uint64_t reactor_wakeups = io::stats().wakeups - wakeups_before;
  std::fprintf(stderr, "rounds %d: %llu reactor wake-ups\n", rounds, static_cast<unsigned long long>(reactor_wakeups));
  EXPECT_GT(reactor_wakeups, 0u) << "the reactor never fetched a doorbell: the pass-on was not exercised";
}

// A connection becomes readable while the only worker sleeps in epoll_wait:
// the worker reads it and runs the woken task itself. Linux wakes the newest
// waiter of an epoll set first, and the reactor thread has waited longer, so
// the worker takes (nearly) every event; the reactor stays asleep.
TEST(IoSleepingWorker, TakesReadinessInsteadOfTheReactor) {
  if (!epoll_backend()) GTEST_SKIP() << "workers sleep in the epoll backend only";
  promptly::runtime rt{workers(1)};
  auto [a, b] = io::make_socket_pair();
  const int rounds = static_cast<int>(scaled(200, 4));
  const io::reactor_stats before = io::stats();
  within(120s, "TakesReadinessInsteadOfTheReactor", [&, &a = a, &b = b] {
    for (int i = 0; i < rounds; ++i) {
      const std::uint64_t pending_before = io::stats().pending_operations;
      auto got = rt.submit([&] {
        char byte = 0;
        const std::size_t n = io::read(b, std::span(&byte, 1), 30s).get();
        return n == 1 ? byte : '\0';
      });
      ASSERT_TRUE(wait_until([&] { return io::stats().pending_operations > pending_before; }, 30s)) << "round " << i;
      ASSERT_TRUE(a_worker_sleeps_in_epoll(rt)) << "round " << i;
      const char sent = static_cast<char>('a' + i % 26);
      io::write(a, std::string_view(&sent, 1)).get();
      EXPECT_EQ(std::move(got).get(), sent);
    }
  });
  const io::reactor_stats after = io::stats();
  const std::uint64_t by_worker = after.worker_events - before.worker_events;
  const std::uint64_t reactor_wakeups = after.wakeups - before.wakeups;
  std::fprintf(stderr, "rounds %d: %llu events taken by workers, %llu reactor wake-ups\n", rounds,
               static_cast<unsigned long long>(by_worker), static_cast<unsigned long long>(reactor_wakeups));
  EXPECT_GE(by_worker, static_cast<std::uint64_t>(rounds / 2)) << "the reactor thread took the readiness";
  EXPECT_LE(reactor_wakeups, static_cast<std::uint64_t>(rounds / 2));
  expect_reactor_idle();
}

// Descriptors are closed while the only worker sleeps in epoll_wait, which
// may have started before their EPOLL_CTL_DEL: the reactor frees their
// states only after that wait ended a round, and it must get the worker out
// of a wait that would otherwise last for good (a hang here: the reactor
// stuck waiting, retiring_descriptors never back to 0).
TEST(IoSleepingWorker, DescriptorsClosedWhileItSleepsAreFreed) {
  if (!epoll_backend()) GTEST_SKIP() << "workers sleep in the epoll backend only";
  promptly::runtime rt{workers(1)};
  const int rounds = static_cast<int>(scaled(200, 4));
  within(120s, "DescriptorsClosedWhileItSleepsAreFreed", [&] {
    for (int i = 0; i < rounds; ++i) {
      auto [a, b] = io::make_socket_pair();
      char byte = 0;
      auto pending = io::read(b, std::span(&byte, 1), {});  // waits (no deadline, so no timer ends a wait): b joins the epoll set
      if (i % 2 == 0) ASSERT_TRUE(a_worker_sleeps_in_epoll(rt)) << "round " << i;
      b.close();
      EXPECT_THROW(std::move(pending).get(), io::closed);
      ASSERT_TRUE(wait_until([] { return io::stats().retiring_descriptors == 0; }, 30s)) << "round " << i;
      // The runtime still runs work: its worker left no wait behind.
      EXPECT_EQ(rt.submit([i] { return i; }).get(), i);
    }
  });
  expect_reactor_idle();
}
