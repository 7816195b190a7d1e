// Completing at once (src/io/README.md, "Completing at once"): read_line,
// write and send first try their system calls without a heap record, and
// fall back to an operation only when the kernel would block. These tests
// attack what the shortcut could break: readiness that arrives between the
// miss and the operation's start, a write overtaking one queued before it,
// a stop requested before the call, and a partial write continued.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <stop_token>
#include <string>
#include <thread>
#include <tuple>

#include "io_test_support.hpp"
#include "sched/chaos.hpp"

using namespace io_test;
namespace chaos = promptly::detail::chaos;

class IoAtOnce : public ::testing::Test {
 protected:
  void TearDown() override { expect_reactor_idle(); }
};

// The read_line misses (nothing buffered, EAGAIN), and the chaos gate holds
// its caller before the operation exists. A line arrives and the reactor
// handles its edge meanwhile, with no operation queued to give it to. The
// operation's start must try again under the lock, or it waits for an edge
// that already came (a timeout here).
TEST_F(IoAtOnce, ReadinessBetweenAMissAndTheStartIsNotLost) {
  start_reactor();
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b);
  // The first line is read by an operation that waits: b is registered
  // with the reactor from then on, so the next edge goes to the reactor.
  auto first = lines.read_line(10s);
  io::write(a, "first\n").get();
  EXPECT_EQ(first.get(), "first");

  struct gate_opened {
    ~gate_opened() { chaos::at_once_miss_gate.open(); }
  } reset;
  chaos::at_once_miss_gate.arm();
  promptly::future<std::string> second;
  std::thread reader([&] { second = lines.read_line(10s); });
  ASSERT_TRUE(wait_until([] { return chaos::at_once_miss_gate.held(); }, 30s)) << "the read_line did not miss";
  const auto s = io::stats();
  const std::uint64_t handled = s.reactor_events + s.worker_events;
  io::write(a, "second\n").get();
  ASSERT_TRUE(wait_until([&] {
    const auto now = io::stats();
    return now.reactor_events + now.worker_events > handled;
  }, 30s)) << "nobody handled the edge";
  chaos::at_once_miss_gate.open();
  reader.join();
  EXPECT_EQ(second.get(), "second");
}

// A write whose buffer the socket cannot take at once queues the rest. The
// reader then empties the socket, and the chaos gate holds whoever handles
// the writability edge: the socket has room, the queued write does not know
// it yet. A second write must queue behind it, not reach the socket first.
TEST_F(IoAtOnce, AWriteDoesNotOvertakeAQueuedOne) {
  start_reactor();
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  int small = 4096;
  ASSERT_EQ(::setsockopt(a.native_handle(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  const std::string big(1 << 20, 'x');
  auto first = io::write(a, big, 30s);
  ASSERT_FALSE(first.is_ready()) << "the socket took 1 MiB at once: nothing was queued";
  struct gate_opened {
    ~gate_opened() { chaos::ready_event_gate.open(); }
  } reset;
  chaos::ready_event_gate.arm();
  // Whatever the socket holds now (the first write's head).
  std::string got;
  char chunk[65536];
  while (!chaos::ready_event_gate.held()) {
    const ssize_t n = ::recv(b.native_handle(), chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) got.append(chunk, static_cast<std::size_t>(n));
    if (n <= 0) std::this_thread::yield();
  }
  auto second = io::write(a, "tail", 30s);
  chaos::ready_event_gate.open();
  got += read_exactly(b, big.size() + 4 - got.size(), 30s);
  EXPECT_EQ(first.get(), big.size()) << "the bytes written before the queueing are counted";
  EXPECT_EQ(second.get(), 4u);
  EXPECT_EQ(got.find_first_not_of('x'), big.size()) << "the second write's bytes came inside the first's";
  EXPECT_EQ(got.substr(big.size()), "tail");
}

// A stop requested before the call cancels it even when it could complete
// at once, as it did before the shortcut: nothing is read or written.
TEST_F(IoAtOnce, AStopRequestedBeforeTheCallCancelsIt) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b);
  io::write(a, "kept\n").get();
  std::stop_source stop;
  stop.request_stop();
  EXPECT_THROW(lines.read_line(5s, stop.get_token()).get(), io::cancelled);
  EXPECT_THROW(io::write(a, "dropped\n", 5s, stop.get_token()).get(), io::cancelled);
  EXPECT_THROW(io::send(a, "dropped\n", 0, 5s, stop.get_token()).get(), io::cancelled);
  EXPECT_EQ(lines.read_line(5s).get(), "kept");
  io::write(a, "next\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), "next") << "a cancelled write sent bytes";
}

// Errors of a call that completes at once reach its future as the
// operation's would: a closed peer (EPIPE or ECONNRESET) and the end of a
// stream.
TEST_F(IoAtOnce, ErrorsAtOnceAreTheOperationsErrors) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b);
  io::write(a, "last").get();
  a.shutdown_write();
  EXPECT_EQ(lines.read_line(5s).get(), "last");
  EXPECT_THROW(lines.read_line(5s).get(), io::end_of_file);
  b.close();
  try {
    io::write(a, "to nobody\n").get();
    ADD_FAILURE() << "a write to a closed peer succeeded";
  } catch (const io::error& e) {
    EXPECT_TRUE(e.errno_value() == EPIPE || e.errno_value() == ECONNRESET) << e.what();
    EXPECT_EQ(e.operation(), "write");
  }
}
