// The listener: echo over TCP and Unix sockets, levels, error reports, and
// stopping it releases connections that pass the handler's token on.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "io_test_support.hpp"

using namespace io_test;

class IoListener : public ::testing::Test {
 protected:
  void TearDown() override { expect_reactor_idle(); }
};

namespace {

// Echoes lines until the client closes (seed 004 Sec. 6.2.1, network echo).
void echo_lines(io::descriptor c, std::stop_token st) {
  io::line_reader lines(c);
  for (;;) io::write(c, lines.read_line({}, st).get() + "\n", {}, st).get();
}

}  // namespace

TEST_F(IoListener, TcpEchoesManyClients) {
  promptly::runtime rt{workers(2)};
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

TEST_F(IoListener, UnixEchoes) {
  promptly::runtime rt{workers(2)};
  std::string path = "/tmp/promptly-io-test-" + std::to_string(::getpid()) + ".sock";
  ::unlink(path.c_str());
  auto l = io::listener::unix_socket(path);
  EXPECT_EQ(l.port(), 0);
  auto served = l.serve(rt, echo_lines);
  io::descriptor c = io::connect_unix(path, 5s).get();
  io::line_reader lines(c);
  io::write(c, "over unix\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), "over unix");
  l.close();  // ends the loop and its connections
  served.get();
  EXPECT_THROW(lines.read_line(5s).get(), io::end_of_file);  // the handler ended, closing c's peer
  ::unlink(path.c_str());
}

// Stopping the listener releases connection tasks parked in reads: the
// owner's cancellation reaches every pending operation.
TEST_F(IoListener, StoppingReleasesConnectionsThatPassTheToken) {
  promptly::runtime rt{workers(2)};
  auto l = io::listener::tcp("127.0.0.1", 0);
  std::stop_source stop;
  std::atomic<int> started{0}, ended{0};
  auto served = l.serve(
      rt,
      [&](io::descriptor c, std::stop_token st) {
        char buf[8];
        auto pending = io::read(c, std::span(buf), {}, st);  // the client never writes
        ++started;
        try {
          pending.get();
        } catch (const io::cancelled&) {
          ++ended;
        } catch (const io::closed&) {
          ++ended;
        }
      },
      {.stop = stop.get_token()});
  std::vector<io::descriptor> clients;
  for (int i = 0; i < 10; ++i) clients.push_back(io::connect_tcp("127.0.0.1", l.port(), 5s).get());
  ASSERT_TRUE(eventually([&] { return started.load() == 10; }));
  stop.request_stop();
  served.get();
  EXPECT_TRUE(eventually([&] { return ended.load() == 10; }));
  EXPECT_EQ(ended.load(), 10);
}

// The accept loop and every connection task run at serve_options::level,
// and a task woken by the reactor resumes at its own level.
TEST_F(IoListener, RunsConnectionsAtItsLevel) {
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
  EXPECT_TRUE(eventually([&] { return after.load() >= 0; }));
  EXPECT_EQ(before.load(), 2);
  EXPECT_EQ(after.load(), 2);
  l.close();
  served.get();
  EXPECT_THROW(l.serve(leveled, [](io::descriptor) {}, {.level = 3}), std::out_of_range);
}

TEST_F(IoListener, HandlerErrorsAreReported) {
  promptly::runtime rt{workers(2)};
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
  EXPECT_TRUE(eventually([&] { return reported.load() == 1; }));
  EXPECT_EQ(reported.load(), 1);
  l.close();
  served.get();
}
