// Stress: 2000 connections each parked on a read, served by a 2-worker
// runtime while a CPU-bound computation runs (no worker is held by a waiting
// connection), and completion racing timeout, cancellation and close.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>
#include <tuple>

#include "io_test_support.hpp"
#include "sched/chaos.hpp"

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

// Two workers that keep polling while idle (the yields never run out), for
// the tests that stall a worker's poll.
promptly::runtime_config polling_workers() {
  auto cfg = workers(2);
  cfg.yield_bound = 1'000'000;
  cfg.idle_yield_bound = 1'000'000;
  return cfg;
}

// Ends the chaos stalls of worker polls when a test leaves, however it leaves.
struct worker_poll_stalls_off {
  ~worker_poll_stalls_off() { promptly::detail::chaos::stall_worker_polls(0); }
};

// Waits up to `limit` for a worker's poll to take the chaos budget of one
// stall (it is stalled now, or was); true if one did. Ends the stalls.
bool a_worker_poll_stalled(std::chrono::milliseconds limit) {
  namespace chaos = promptly::detail::chaos;
  const auto give_up = clock::now() + limit;
  while (chaos::stalled_worker_polls.load() != 0 && clock::now() < give_up) std::this_thread::yield();
  const bool stalled = chaos::stalled_worker_polls.load() == 0;
  chaos::stall_worker_polls(0);
  return stalled;
}

// A one-byte read that raced the close of its descriptor: it got its byte
// (counted in `completed`) or failed with io::closed (in `closed`).
void count_read_outcome(promptly::future<std::size_t>&& read, int& completed, int& closed) {
  try {
    EXPECT_EQ(std::move(read).get(), 1u);
    ++completed;
  } catch (const io::closed&) {
    ++closed;
  }
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
  ASSERT_TRUE(wait_until([&] { return parked.load() == n; }, 60s));
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
// read ends once, with its racer's outcome or a timeout, never with another
// racer's outcome; a read that timed out consumed nothing; and nothing is
// left pending. Half the rounds have a long deadline, so that the racer
// must win them: each racer's outcome is then seen for sure.
TEST(IoStress, CompletionRacesTimeoutCancelAndClose) {
  const int rounds = static_cast<int>(scaled(2000, 4));
  std::mt19937 rng(5);
  enum outcome { value, timeout, cancel, close_, count };
  const char* const names[] = {"a value", "a timeout", "a cancellation", "a close"};
  int seen[3][count] = {};  // [racer][outcome]
  for (int i = 0; i < rounds; ++i) {
    io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
    std::tie(a, b) = io::make_socket_pair();
    std::stop_source stop;
    char buf[4] = {};
    const bool racer_must_win = i % 2 == 0;
    const auto until = racer_must_win ? std::chrono::microseconds(30s) : std::chrono::microseconds(rng() % 300);
    auto f = io::read(b, std::span(buf), until, stop.get_token());
    const unsigned who = rng() % 3;  // 0 writes, 1 stops, 2 closes
    std::thread racer([&, who] {
      if (who == 0) io::write(a, "x").get();
      else if (who == 1) stop.request_stop();
      else b.close();
    });
    outcome got = count;
    try {
      EXPECT_EQ(f.get(), 1u);
      EXPECT_EQ(buf[0], 'x');
      got = value;
    } catch (const io::timed_out&) {
      got = timeout;
    } catch (const io::cancelled&) {
      got = cancel;
    } catch (const io::closed&) {
      got = close_;
    }
    racer.join();
    ASSERT_NE(got, count);
    const outcome racer_wins = who == 0 ? value : who == 1 ? cancel : close_;
    if (racer_must_win) {
      EXPECT_EQ(got, racer_wins) << "round " << i << ": " << names[racer_wins] << " was expected, got " << names[got];
    } else {
      EXPECT_TRUE(got == racer_wins || got == timeout)
          << "round " << i << ": " << names[racer_wins] << " or a timeout was expected, got " << names[got];
    }
    if (who == 0 && got == timeout) {  // the byte written after the timeout is still there
      EXPECT_EQ(read_exactly(b, 1), "x") << "round " << i;
    }
    ++seen[who][got];
  }
  for (int who = 0; who < 3; ++who) {
    const outcome racer_wins = who == 0 ? value : who == 1 ? cancel : close_;
    EXPECT_GT(seen[who][racer_wins], 0) << names[racer_wins] << " never happened";
  }
  expect_reactor_idle();
}

// Writers pipeline several writes each (started before the earlier ones
// complete) onto one socket while several readers read the other end. Every
// record carries its writer and sequence number, and its body is derived
// from both: so a record torn by another writer's bytes, a lost or
// duplicated record, or records of one writer out of order all show.
// Readers take a ticket when they start a read; since reads of one
// descriptor complete in start order, the chunks sorted by ticket are the
// byte stream.
TEST(IoStress, ConcurrentWritersAndReadersOnOneSocket) {
  promptly::runtime rt{workers(2)};
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  constexpr int writers = 8, pipeline = 4;
  constexpr std::size_t record = 1000;  // many records fill the socket buffer: writes go partial and queue
  const int per_writer = static_cast<int>(scaled(200, 10)) / pipeline * pipeline;
  const std::size_t total = static_cast<std::size_t>(writers) * per_writer * record;
  auto make_record = [](int w, int seq) {
    char head[32];
    const int len = std::snprintf(head, sizeof head, "w%d s%06d|", w, seq);
    std::string r(record, static_cast<char>('a' + (w * 7 + seq) % 26));
    r.replace(0, static_cast<std::size_t>(len), head);
    return r;
  };

  std::atomic<std::size_t> received{0};
  std::binary_semaphore start_gate{1};  // a ticket and its read's start, together (no wait inside)
  std::uint64_t next_ticket = 0;        // guarded by start_gate
  std::mutex chunks_mu;
  std::vector<std::pair<std::uint64_t, std::string>> chunks;
  rt.run([&] {
    promptly::task_group tg;
    for (int w = 0; w < writers; ++w)
      tg.spawn([&, w] {
        for (int k = 0; k < per_writer; k += pipeline) {
          std::vector<std::string> batch;  // alive until its writes complete
          std::vector<promptly::future<std::size_t>> pending;
          for (int j = 0; j < pipeline; ++j) batch.push_back(make_record(w, k + j));
          for (auto& r : batch) pending.push_back(io::write(a, r, 30s));
          for (auto& p : pending) EXPECT_EQ(p.get(), record);
        }
      });
    for (int r = 0; r < 4; ++r)
      tg.spawn([&] {
        std::vector<char> buf(3 * record / 2);
        while (received.load() < total) {
          start_gate.acquire();
          const std::uint64_t ticket = next_ticket++;
          auto f = io::read(b, std::span(buf), 50ms);
          start_gate.release();
          try {
            const std::size_t n = f.get();
            received += n;
            std::lock_guard lock(chunks_mu);
            chunks.emplace_back(ticket, std::string(buf.data(), n));
          } catch (const io::timed_out&) {
            // consumed nothing; look at `received` again
          }
        }
      });
    tg.wait();
  });
  ASSERT_EQ(received.load(), total);
  std::sort(chunks.begin(), chunks.end());
  std::string stream;
  for (auto& c : chunks) stream += c.second;
  ASSERT_EQ(stream.size(), total);
  std::vector<int> next_seq(writers, 0);
  for (std::size_t at = 0; at < total; at += record) {
    int w = -1, seq = -1;
    ASSERT_EQ(std::sscanf(stream.c_str() + at, "w%d s%d|", &w, &seq), 2) << "no record header at byte " << at;
    ASSERT_TRUE(w >= 0 && w < writers) << "bad writer id at byte " << at;
    ASSERT_EQ(seq, next_seq[w]) << "writer " << w << "'s records out of order at byte " << at;
    ASSERT_EQ(stream.compare(at, record, make_record(w, seq)), 0) << "record w" << w << " s" << seq << " is torn";
    ++next_seq[w];
  }
  for (int w = 0; w < writers; ++w) EXPECT_EQ(next_seq[w], per_writer) << "writer " << w;
  expect_reactor_idle();
}

// Idle workers poll the epoll set themselves (docs/io.md, "Idle workers
// poll"). A worker's poll that fetched a descriptor's event and was then
// preempted must find the descriptor's state alive, even though the
// descriptor was closed and destroyed meanwhile and the reactor thread,
// which frees retired states, ran: without the reactor's wait for worker
// polls in flight, ASan reports a use after free here. The workers spin
// without sleeping (huge yield bounds), so they poll continuously; a chaos
// budget (sched/chaos.hpp) stalls the poll that fetched the event, and the
// test closes the descriptor once that stall has begun.
// io_uring: during bursts the reactor queues readiness for idle workers
// (src/io/README.md, "Backends"), each entry holding a reference to its
// descriptor's state. A worker's poll stalls between taking the queue and
// handling it (a chaos budget) while the test closes and destroys the
// descriptors; the reactor meanwhile sees their removals and drops the
// ring's references, so only the queue's reference keeps those states alive
// for the worker (ASan checks the handling). Every read completes or fails
// closed, and the reactor ends idle.
TEST(IoStress, QueuedReadinessOutlivesTheCloseOfItsDescriptor) {
  namespace chaos = promptly::detail::chaos;
  start_reactor();  // it chose its backend
  if (std::string_view(io::stats().backend) != "io_uring") GTEST_SKIP() << "the io_uring backend queues readiness for workers";
  promptly::runtime rt{polling_workers()};  // idle workers keep polling: the reactor hands bursts over
  worker_poll_stalls_off off;
  const std::uint64_t events_before = io::stats().worker_events;
  constexpr int burst = 8;
  const int rounds = static_cast<int>(scaled(100, 4));
  int completed = 0, closed = 0, stalled = 0;
  within(120s, "QueuedReadinessOutlivesTheCloseOfItsDescriptor", [&] {
    for (int i = 0; i < rounds; ++i) {
      std::vector<io::descriptor> writers;
      std::vector<std::unique_ptr<io::descriptor>> readers;
      std::vector<std::array<char, 4>> bufs(burst);
      std::vector<promptly::future<std::size_t>> reads;
      const std::uint64_t pending_before = io::stats().pending_operations;
      for (int k = 0; k < burst; ++k) {
        auto pair = io::make_socket_pair();
        writers.push_back(std::move(pair.first));
        readers.push_back(std::make_unique<io::descriptor>(std::move(pair.second)));
        reads.push_back(rt.submit([d = readers.back().get(), b = &bufs[k]] { return io::read(*d, std::span(*b), 30s).get(); }));
      }
      ASSERT_TRUE(wait_until([&] { return io::stats().pending_operations >= pending_before + burst; }, 30s)) << "round " << i;
      chaos::stall_worker_polls(1);
      for (auto& w : writers) io::write(w, "x").get();
      // The reactor may handle the burst itself; then nothing stalls.
      if (a_worker_poll_stalled(50ms)) ++stalled;
      readers.clear();  // closes and destroys them; parked reads fail with io::closed unless their event came first
      for (auto& f : reads) count_read_outcome(std::move(f), completed, closed);
    }
  });
  std::fprintf(stderr, "rounds %d: %d stalled worker polls, %d reads completed, %d closed\n", rounds, stalled, completed, closed);
  EXPECT_EQ(completed + closed, rounds * burst);
  EXPECT_GT(stalled, 0) << "no worker poll ever took queued readiness";
  EXPECT_GT(io::stats().worker_events, events_before) << "idle workers never handled queued readiness";
  expect_reactor_idle();
}

TEST(IoStress, IdleWorkerPollOutlivesTheCloseOfItsDescriptor) {
  namespace chaos = promptly::detail::chaos;
  start_reactor();  // it chose its backend
  if (std::string_view(io::stats().backend) != "epoll") GTEST_SKIP() << "idle workers poll the epoll backend only";
  promptly::runtime rt{polling_workers()};
  worker_poll_stalls_off off;
  const std::uint64_t events_before = io::stats().worker_events;
  const int rounds = static_cast<int>(scaled(200, 4));
  int completed = 0, closed = 0, stalled = 0;
  within(120s, "IdleWorkerPollOutlivesTheCloseOfItsDescriptor", [&] {
    for (int i = 0; i < rounds; ++i) {
      auto pair = io::make_socket_pair();
      io::descriptor a = std::move(pair.first);
      auto b = std::make_unique<io::descriptor>(std::move(pair.second));
      char buf[4] = {};
      const std::uint64_t pending_before = io::stats().pending_operations;
      auto f = rt.submit([&, d = b.get()] { return io::read(*d, std::span(buf), 30s).get(); });
      ASSERT_TRUE(wait_until([&] { return io::stats().pending_operations > pending_before; }, 30s)) << "round " << i;
      chaos::stall_worker_polls(1);
      io::write(a, "x").get();
      // The reactor may take the event instead of a worker; then nothing stalls.
      if (a_worker_poll_stalled(200ms)) ++stalled;
      b.reset();  // closes it; the parked read fails with io::closed unless the event came first
      count_read_outcome(std::move(f), completed, closed);
    }
  });
  std::fprintf(stderr, "rounds %d: %d stalled worker polls, %d reads completed, %d closed\n", rounds, stalled, completed, closed);
  EXPECT_EQ(completed + closed, rounds);
  EXPECT_GT(stalled, 0) << "no worker poll ever fetched the event";
  EXPECT_GT(io::stats().worker_events, events_before) << "idle workers never handled a readiness event";
  expect_reactor_idle();
}
