// Stress: 2000 connections each parked on a read, served by a 2-worker
// runtime while a CPU-bound computation runs (no worker is held by a waiting
// connection), and completion racing timeout, cancellation and close.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io_test_support.hpp"

using namespace io_test;

namespace {

// Raises the soft RLIMIT_NOFILE to at least `need`; false if the hard limit
// does not allow it.
bool ensure_fd_limit(rlim_t need) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  if (lim.rlim_cur >= need) return true;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need) return false;
  lim.rlim_cur = need;
  return ::setrlimit(RLIMIT_NOFILE, &lim) == 0;
}

}  // namespace

TEST(IoStress, ThousandsOfParkedConnectionsHoldNoWorker) {
  const int n = static_cast<int>(scaled(2000, 4));
  if (!ensure_fd_limit(2 * n + 256)) GTEST_SKIP() << "RLIMIT_NOFILE hard limit below " << 2 * n + 256;
  promptly::runtime rt{workers(2)};
  auto l = io::listener::tcp("127.0.0.1", 0, 4096);
  std::atomic<int> parked{0}, served_lines{0};
  auto served = l.serve(rt, [&](io::descriptor c, std::stop_token st) {
    io::line_reader lines(c);
    for (;;) {
      ++parked;
      std::string line = lines.read_line({}, st).get();
      --parked;
      ++served_lines;
      io::write(c, line + "\n", {}, st).get();
    }
  });

  // Clients connect from this (non-worker) thread.
  std::vector<promptly::future<io::descriptor>> connecting;
  for (int i = 0; i < n; ++i) connecting.push_back(io::connect_tcp("127.0.0.1", l.port(), 30s));
  std::vector<io::descriptor> clients;
  for (auto& f : connecting) clients.push_back(std::move(f).get());
  for (auto t0 = clock::now(); parked < n && clock::now() - t0 < 30s;) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(parked.load(), n) << "every connection task must be parked in read_line";

  // Every connection waits, yet both workers are free: a computation runs.
  const int fib_n = under_tsan ? 18 : 27;
  EXPECT_EQ(rt.submit([&] { return fib(fib_n); }).get(), fib(fib_n));

  // Now echo on every connection while a computation keeps the workers busy.
  auto compute = rt.submit([&] { return fib(fib_n + 2); });
  std::vector<promptly::future<std::size_t>> writes;
  for (int i = 0; i < n; ++i) writes.push_back(io::write(clients[i], "ping " + std::to_string(i) + "\n", 30s));
  for (auto& w : writes) w.get();
  for (int i = 0; i < n; ++i) {
    std::string want = "ping " + std::to_string(i) + "\n";
    EXPECT_EQ(read_exactly(clients[i], want.size(), 30s), want);
  }
  EXPECT_EQ(compute.get(), fib(fib_n + 2));
  EXPECT_EQ(served_lines.load(), n);

  clients.clear();  // every handler sees end of file and ends
  l.close();
  served.get();
  rt.shutdown();  // returns: no connection task is left waiting
  expect_reactor_idle();
}

// Completion, deadline, stop and close race on the same pending reads. Each
// read ends exactly once with one of the allowed outcomes, and nothing is
// left pending.
TEST(IoStress, CompletionRacesTimeoutCancelAndClose) {
  const int rounds = static_cast<int>(scaled(2000, 4));
  std::mt19937 rng(5);
  int values = 0, timeouts = 0, cancels = 0, closes = 0;
  for (int i = 0; i < rounds; ++i) {
    auto [a, b] = io::make_socket_pair();
    std::stop_source stop;
    char buf[4];
    const auto jitter = std::chrono::microseconds(rng() % 300);
    auto f = io::read(b, std::span(buf), jitter, stop.get_token());
    const unsigned who = rng() % 3;
    std::thread racer([&, who] {
      if (who == 0) io::write(a, "x").get();
      else if (who == 1) stop.request_stop();
      else b.close();
    });
    try {
      EXPECT_EQ(f.get(), 1u);
      ++values;
    } catch (const io::timed_out&) {
      ++timeouts;
    } catch (const io::cancelled&) {
      ++cancels;
    } catch (const io::closed&) {
      ++closes;
    }
    racer.join();
  }
  EXPECT_EQ(values + timeouts + cancels + closes, rounds);
  expect_reactor_idle();
}

// Several tasks read and write one socket pair at once: every byte arrives
// once, in order per direction.
TEST(IoStress, ConcurrentWritersAndReadersOnOneSocket) {
  promptly::runtime rt{workers(2)};
  auto [a, b] = io::make_socket_pair();
  const int writers = 8;
  const int per_writer = static_cast<int>(scaled(500, 10));
  const std::size_t total = static_cast<std::size_t>(writers) * per_writer * 16;
  std::atomic<std::size_t> received{0};
  rt.run([&] {
    promptly::task_group tg;
    for (int w = 0; w < writers; ++w)
      tg.spawn([&] {
        std::string msg(16, 'm');
        for (int k = 0; k < per_writer; ++k) io::write(a, msg, 30s).get();
      });
    for (int r = 0; r < 4; ++r)
      tg.spawn([&] {
        char buf[100];
        while (received.load() < total) {
          try {
            received += io::read(b, std::span(buf), 50ms).get();
          } catch (const io::timed_out&) {
          }
        }
      });
    tg.wait();
  });
  EXPECT_EQ(received.load(), total);
  expect_reactor_idle();
}
