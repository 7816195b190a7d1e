// I/O futures on real descriptors: pipes, socket pairs, loopback TCP and
// Unix sockets. Round trips, parking instead of blocking, every error the
// API promises (end of file, peer reset, timeouts, cancellation, close under
// a pending read), the line reader and the listener.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "io_test_support.hpp"

using namespace io_test;

class Io : public ::testing::Test {
 protected:
  void TearDown() override { expect_reactor_idle(); }
  promptly::runtime rt{workers(2)};
};

TEST_F(Io, PipeRoundTrip) {
  auto [r, w] = io::make_pipe();
  rt.run([&] {
    auto reader = promptly::async([&] { return read_exactly(r, 5); });
    EXPECT_EQ(io::write(w, "hello").get(), 5u);
    EXPECT_EQ(reader.get(), "hello");
  });
}

// One worker: the reader parks on an empty pipe and the only worker runs the
// task that writes. If read blocked the worker, this would deadlock.
TEST_F(Io, ReadParksTheFiberNotTheWorker) {
  promptly::runtime one{workers(1)};
  auto [r, w] = io::make_pipe();
  std::atomic<bool> reader_started{false};
  auto got = one.run([&] {
    auto reader = promptly::async([&] {
      reader_started = true;
      return read_exactly(r, 3);
    });
    auto writer = promptly::async([&] {
      while (!reader_started) io::sleep_for(1ms).get();  // parks too
      io::write(w, "abc").get();
    });
    writer.get();
    return reader.get();
  });
  EXPECT_EQ(got, "abc");
}

// Outside a runtime get() blocks the calling thread.
TEST_F(Io, WorksFromAPlainThread) {
  auto [r, w] = io::make_pipe();
  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    io::write(w, "xyz").get();
  });
  EXPECT_EQ(read_exactly(r, 3), "xyz");
  writer.join();
}

// Reads queued on one descriptor complete in the order they were started.
TEST_F(Io, QueuedReadsCompleteInOrder) {
  auto [r, w] = io::make_pipe();
  char a = 0, b = 0;
  auto fa = io::read(r, std::span<char>(&a, 1));
  auto fb = io::read(r, std::span<char>(&b, 1));
  EXPECT_FALSE(fa.is_ready());
  io::write(w, "1").get();
  EXPECT_EQ(fa.get(), 1u);
  EXPECT_EQ(a, '1');
  io::write(w, "2").get();
  EXPECT_EQ(fb.get(), 1u);
  EXPECT_EQ(b, '2');
}

// A write larger than the pipe's buffer continues across partial writes.
TEST_F(Io, LargeWriteCompletesWhole) {
  auto [r, w] = io::make_pipe();
  std::string data(1 << 20, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  rt.run([&] {
    auto writer = promptly::async([&] { return io::write(w, data).get(); });
    std::string got = read_exactly(r, data.size());
    EXPECT_EQ(writer.get(), data.size());
    EXPECT_TRUE(got == data);
  });
}

TEST_F(Io, SocketPairRecvSend) {
  auto [a, b] = io::make_socket_pair();
  rt.run([&] {
    auto echo = promptly::async([&] {
      char buf[64];
      std::size_t n = io::recv(b, std::span(buf)).get();
      io::send(b, std::string_view(buf, n)).get();
    });
    io::send(a, "ping").get();
    EXPECT_EQ(read_exactly(a, 4), "ping");
    echo.get();
  });
}

TEST_F(Io, EndOfFile) {
  auto [r, w] = io::make_pipe();
  char buf[8];
  auto pending = io::read(r, std::span(buf));  // parked before the close
  std::thread closer([&] {
    std::this_thread::sleep_for(10ms);
    w.close();
  });
  try {
    pending.get();
    FAIL() << "read after the writer closed must throw end_of_file";
  } catch (const io::end_of_file& e) {
    EXPECT_EQ(e.errno_value(), 0);
    EXPECT_EQ(e.operation(), "read");
  }
  closer.join();
  EXPECT_THROW(io::read(r, std::span(buf)).get(), io::end_of_file);  // and every read after
}

TEST_F(Io, ReadTimesOut) {
  auto [r, w] = io::make_pipe();
  char buf[8];
  auto t0 = clock::now();
  try {
    rt.run([&] { io::read(r, std::span(buf), 30ms).get(); });
    FAIL() << "expected io::timed_out";
  } catch (const io::timed_out& e) {
    EXPECT_EQ(e.errno_value(), ETIMEDOUT);
    EXPECT_EQ(e.operation(), "read");
    EXPECT_EQ(e.fd(), r.native_handle());
    EXPECT_NE(std::string(e.what()).find("promptly::io::read(fd "), std::string::npos) << e.what();
  }
  EXPECT_GE(ms_since(t0), 30.0);
  EXPECT_LT(ms_since(t0), 30.0 + late_bound_ms);
  // The timed-out read consumed nothing: data written now is read whole.
  io::write(w, "ok").get();
  EXPECT_EQ(read_exactly(r, 2), "ok");
}

// A deadline in the past still tries once.
TEST_F(Io, PastDeadlineTriesOnce) {
  auto [r, w] = io::make_pipe();
  char buf[8];
  EXPECT_THROW(io::read(r, std::span(buf), clock::now() - 1s).get(), io::timed_out);
  io::write(w, "x").get();
  EXPECT_EQ(io::read(r, std::span(buf), clock::now() - 1s).get(), 1u);
}

TEST_F(Io, CloseUnderPendingRead) {
  auto [r, w] = io::make_pipe();
  std::atomic<bool> parked{false};
  auto reader = rt.submit([&] {
    char buf[8];
    auto f = io::read(r, std::span(buf));
    parked = true;
    try {
      f.get();
      return std::string("no error");
    } catch (const io::closed& e) {
      return std::string(e.what());
    }
  });
  while (!parked) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(5ms);
  r.close();
  std::string what = reader.get();
  EXPECT_NE(what.find("closed"), std::string::npos) << what;
  EXPECT_EQ(r.native_handle(), -1);
  char buf[8];
  EXPECT_THROW(io::read(r, std::span(buf)).get(), io::closed);  // after the close too
}

TEST_F(Io, StopTokenCancelsPendingOperations) {
  auto [r, w] = io::make_pipe();
  std::stop_source owner;
  char b1[4], b2[4];
  auto f1 = io::read(r, std::span(b1), {}, owner.get_token());
  auto f2 = io::sleep_for(10s, owner.get_token());
  auto t0 = clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(10ms);
    owner.request_stop();
  });
  EXPECT_THROW(f1.get(), io::cancelled);
  EXPECT_THROW(f2.get(), io::cancelled);
  EXPECT_LT(ms_since(t0), 1000.0);
  canceller.join();
  // Already stopped: fails at once, without touching the descriptor.
  io::write(w, "z").get();
  EXPECT_THROW(io::read(r, std::span(b2), {}, owner.get_token()).get(), io::cancelled);
  EXPECT_EQ(read_exactly(r, 1), "z");
}

TEST_F(Io, WriteToClosedPipeFailsWithoutSigpipe) {
  auto [r, w] = io::make_pipe();
  r.close();
  try {
    io::write(w, "lost").get();
    FAIL() << "expected connection_reset";
  } catch (const io::connection_reset& e) {
    EXPECT_EQ(e.errno_value(), EPIPE);
    EXPECT_NE(std::string(e.what()).find("EPIPE"), std::string::npos) << e.what();
  }
}

TEST_F(Io, TcpConnectRefused) {
  std::uint16_t port;
  {
    auto l = io::listener::tcp("127.0.0.1", 0);
    port = l.port();
  }  // closed: nobody listens on `port` now
  try {
    io::connect_tcp("127.0.0.1", port, 5s).get();
    FAIL() << "expected ECONNREFUSED";
  } catch (const io::error& e) {
    EXPECT_EQ(e.errno_value(), ECONNREFUSED) << e.what();
    EXPECT_EQ(e.operation(), "connect");
  }
  EXPECT_THROW(io::connect_tcp("not-an-address", 1), io::error);
}

TEST_F(Io, AcceptTimesOut) {
  auto l = io::listener::tcp("127.0.0.1", 0);
  EXPECT_THROW(l.accept(20ms).get(), io::timed_out);
}

// The peer aborts the connection (SO_LINGER 0: close sends RST): the pending
// read fails with connection_reset.
TEST_F(Io, PeerReset) {
  auto l = io::listener::tcp("127.0.0.1", 0);
  auto server_side = rt.submit([&] {
    io::descriptor c = l.accept(5s).get();
    char buf[16];
    try {
      while (true) io::read(c, std::span(buf), 5s).get();
    } catch (const io::connection_reset& e) {
      return e.errno_value();
    }
  });
  io::descriptor client = io::connect_tcp("127.0.0.1", l.port(), 5s).get();
  io::write(client, "x").get();
  std::this_thread::sleep_for(20ms);  // let the server park on its next read
  linger lg{1, 0};
  ASSERT_EQ(::setsockopt(client.native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
  client.close();
  EXPECT_EQ(server_side.get(), ECONNRESET);
}

TEST_F(Io, LineReaderSplitsAndJoinsChunks) {
  auto [a, b] = io::make_socket_pair();
  io::line_reader lines(b);
  rt.run([&] {
    auto writer = promptly::async([&] {
      io::write(a, "one\ntw").get();
      io::sleep_for(10ms).get();
      io::write(a, "o\r\nthree\nfou").get();
      io::sleep_for(10ms).get();
      io::write(a, "r").get();
      a.shutdown_write();
    });
    EXPECT_EQ(lines.read_line(5s).get(), "one");
    EXPECT_EQ(lines.read_line(5s).get(), "two\r");
    EXPECT_EQ(lines.read_line(5s).get(), "three");
    EXPECT_EQ(lines.read_line(5s).get(), "four");  // the final, unterminated line
    EXPECT_THROW(lines.read_line(5s).get(), io::end_of_file);
    writer.get();
  });
}

// A timed-out read_line loses nothing: the partial line stays buffered.
TEST_F(Io, LineReaderKeepsAPartialLineAcrossATimeout) {
  auto [a, b] = io::make_socket_pair();
  io::line_reader lines(b);
  io::write(a, "hal").get();
  EXPECT_THROW(lines.read_line(20ms).get(), io::timed_out);
  EXPECT_EQ(lines.buffered(), 3u);
  io::write(a, "f\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), "half");
}

// A write that cannot finish (nobody reads a full pipe) times out; so does
// one queued behind it.
TEST_F(Io, WriteTimesOutWhenNobodyReads) {
  auto [r, w] = io::make_pipe();
  std::string big(1 << 20, 'x');  // far more than a pipe buffer
  auto first = io::write(w, big, 30ms);
  auto second = io::write(w, "y", 60ms);
  EXPECT_THROW(first.get(), io::timed_out);
  EXPECT_THROW(second.get(), io::timed_out);
}

TEST_F(Io, LineReaderLimitsAndRules) {
  auto [a, b] = io::make_socket_pair();
  io::line_reader lines(b, 16);
  auto pending = lines.read_line();
  EXPECT_THROW(lines.read_line(), std::logic_error);  // one pending read_line per reader
  io::write(a, "short\n").get();
  EXPECT_EQ(pending.get(), "short");
  EXPECT_THROW(lines.read_line(1ms).get(), io::timed_out);
  io::write(a, std::string(100, 'x')).get();
  try {
    lines.read_line(5s).get();
    FAIL() << "expected EMSGSIZE";
  } catch (const io::error& e) {
    EXPECT_EQ(e.errno_value(), EMSGSIZE);
    EXPECT_EQ(e.operation(), "read_line");
  }
}

namespace {
// Echoes lines until the client closes (seed 004 Sec. 6.2.1, network echo).
void echo_lines(io::descriptor c, std::stop_token st) {
  io::line_reader lines(c);
  for (;;) io::write(c, lines.read_line({}, st).get() + "\n", {}, st).get();
}
}  // namespace

TEST_F(Io, TcpListenerEchoesManyClients) {
  auto l = io::listener::tcp("127.0.0.1", 0);
  std::stop_source stop;
  auto served = l.serve(rt, echo_lines, {.stop = stop.get_token()});
  const int clients = 20, rounds = 5;
  rt.run([&] {
    promptly::task_group tg;
    for (int i = 0; i < clients; ++i) {
      tg.spawn([&, i] {
        io::descriptor c = io::connect_tcp("127.0.0.1", l.port(), 5s).get();
        io::line_reader lines(c);
        for (int k = 0; k < rounds; ++k) {
          std::string msg = "client " + std::to_string(i) + " round " + std::to_string(k);
          io::write(c, msg + "\n", 5s).get();
          EXPECT_EQ(lines.read_line(5s).get(), msg);
        }
      });
    }
    tg.wait();
  });
  stop.request_stop();
  served.get();
}

TEST_F(Io, UnixListenerEchoes) {
  std::string path = "/tmp/promptly-io-test-" + std::to_string(::getpid()) + ".sock";
  ::unlink(path.c_str());
  auto l = io::listener::unix_socket(path);
  EXPECT_EQ(l.port(), 0);
  auto served = l.serve(rt, echo_lines);
  io::descriptor c = io::connect_unix(path, 5s).get();
  io::line_reader lines(c);
  io::write(c, "over unix\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), "over unix");
  l.close();  // ends the loop; its connections' token is stopped
  served.get();
  EXPECT_THROW(lines.read_line(5s).get(), io::end_of_file);  // the handler ended, closing c's peer
  ::unlink(path.c_str());
}

// Stopping the listener releases connection tasks parked in reads: the
// owner's cancellation reaches every pending operation.
TEST_F(Io, StoppingTheListenerReleasesItsConnections) {
  auto l = io::listener::tcp("127.0.0.1", 0);
  std::stop_source stop;
  std::atomic<int> started{0}, ended{0};
  auto served = l.serve(
      rt,
      [&](io::descriptor c, std::stop_token st) {
        ++started;
        char buf[8];
        try {
          io::read(c, std::span(buf), {}, st).get();  // the client never writes
        } catch (const io::cancelled&) {
          ++ended;
        }
      },
      {.stop = stop.get_token()});
  std::vector<io::descriptor> clients;
  for (int i = 0; i < 10; ++i) clients.push_back(io::connect_tcp("127.0.0.1", l.port(), 5s).get());
  for (auto t0 = clock::now(); started < 10 && clock::now() - t0 < 5s;) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(started.load(), 10);
  stop.request_stop();
  served.get();
  for (auto t0 = clock::now(); ended < 10 && clock::now() - t0 < 5s;) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(ended.load(), 10);
}

// The accept loop and every connection task run at serve_options::level,
// and a task woken by the reactor resumes at its own level.
TEST_F(Io, ListenerRunsConnectionsAtItsLevel) {
  promptly::runtime_config cfg = workers(2);
  cfg.levels = 3;
  promptly::runtime leveled{cfg};
  auto l = io::listener::tcp("127.0.0.1", 0);
  std::atomic<int> before{-1}, after{-1};
  auto served = l.serve(
      leveled,
      [&](io::descriptor c) {
        before = static_cast<int>(promptly::current_level());
        char buf[4];
        io::read(c, std::span(buf), 5s).get();  // parks; the reactor wakes it
        after = static_cast<int>(promptly::current_level());
      },
      {.level = 2});
  io::descriptor c = io::connect_tcp("127.0.0.1", l.port(), 5s).get();
  io::write(c, "x").get();
  for (auto t0 = clock::now(); after < 0 && clock::now() - t0 < 5s;) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(before.load(), 2);
  EXPECT_EQ(after.load(), 2);
  l.close();
  served.get();
  EXPECT_THROW(l.serve(leveled, [](io::descriptor) {}, {.level = 3}), std::out_of_range);
}

TEST_F(Io, HandlerErrorsAreReported) {
  auto l = io::listener::tcp("127.0.0.1", 0);
  std::atomic<int> reported{0};
  auto served = l.serve(
      rt, [](io::descriptor) { throw std::runtime_error("handler bug"); },
      {.on_error = [&](std::exception_ptr e) {
         try {
           std::rethrow_exception(e);
         } catch (const std::runtime_error& x) {
           if (std::string(x.what()) == "handler bug") ++reported;
         }
       }});
  io::descriptor c = io::connect_tcp("127.0.0.1", l.port(), 5s).get();
  for (auto t0 = clock::now(); reported == 0 && clock::now() - t0 < 5s;) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(reported.load(), 1);
  l.close();
  served.get();
}

TEST_F(Io, AdoptedDescriptorAndEmptyOnes) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // blocking fds, adopted: made non-blocking
  io::descriptor r(fds[0]), w(fds[1]);
  char buf[4];
  EXPECT_THROW(io::read(r, std::span(buf), 10ms).get(), io::timed_out);  // did not block
  io::write(w, "ab").get();
  EXPECT_EQ(read_exactly(r, 2), "ab");
  io::descriptor empty;
  EXPECT_FALSE(empty);
  EXPECT_THROW(io::read(empty, std::span(buf)), io::closed);
  EXPECT_THROW(io::descriptor(-1), io::error);
}

TEST_F(Io, StatsSeeRegistrations) {
  auto [r, w] = io::make_pipe();
  char buf[4];
  auto f = io::read(r, std::span(buf));
  auto s = io::stats();
  EXPECT_TRUE(s.running);
  EXPECT_GE(s.pending_operations, 1u);
  EXPECT_GE(s.watched_descriptors, 1u);
  r.close();
  EXPECT_THROW(f.get(), io::closed);
}
