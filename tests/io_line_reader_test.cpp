// The line reader: lines split across and joined within chunks, partial
// lines kept across a timeout, the one-pending rule, and lines longer than
// the limit: they fail with EMSGSIZE, are discarded up to their newline, and
// the reader goes on with the next line.
#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <tuple>
#include <vector>

#include "io_test_support.hpp"
#include "promptly/co/task.hpp"

using namespace io_test;
namespace co = promptly::co;

class IoLineReader : public ::testing::Test {
 protected:
  void TearDown() override { expect_reactor_idle(); }
};

namespace {

// read_line must fail with EMSGSIZE (and only that).
void expect_oversized(io::line_reader& lines) {
  try {
    std::string got = lines.read_line(5s).get();
    ADD_FAILURE() << "expected EMSGSIZE, read a line of " << got.size() << " bytes";
  } catch (const io::error& e) {
    EXPECT_EQ(e.errno_value(), EMSGSIZE) << e.what();
    EXPECT_EQ(e.operation(), "read_line");
  }
}

}  // namespace

// Each chunk boundary is forced by the reader: the writer sends the rest of
// a line only once the reader's read_line for it is pending, so that
// read_line has to continue across a readiness edge.
TEST_F(IoLineReader, SplitsAndJoinsChunks) {
  promptly::runtime rt{workers(2)};
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b);
  promptly::promise<void> two_pending, four_pending;
  auto two_started = two_pending.get_future();
  auto four_started = four_pending.get_future();
  rt.run([&] {
    auto writer = promptly::async([&] {
      io::write(a, "one\ntw").get();
      two_started.get();
      io::write(a, "o\r\nthree\nfou").get();
      four_started.get();
      io::write(a, "r").get();
      a.shutdown_write();
    });
    EXPECT_EQ(lines.read_line(5s).get(), "one");
    auto two = lines.read_line(5s);
    two_pending.set_value();
    EXPECT_EQ(two.get(), "two\r");
    EXPECT_EQ(lines.read_line(5s).get(), "three");
    auto four = lines.read_line(5s);
    four_pending.set_value();
    EXPECT_EQ(four.get(), "four");  // the final, unterminated line
    EXPECT_THROW(lines.read_line(5s).get(), io::end_of_file);
    writer.get();
  });
}

// A timed-out read_line loses nothing: the partial line stays buffered.
TEST_F(IoLineReader, KeepsAPartialLineAcrossATimeout) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b);
  io::write(a, "hal").get();
  EXPECT_THROW(lines.read_line(20ms).get(), io::timed_out);
  EXPECT_EQ(lines.buffered(), 3u);
  io::write(a, "f\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), "half");
}

TEST_F(IoLineReader, OnePendingReadLineAtATime) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b, 16);
  auto pending = lines.read_line();
  EXPECT_THROW((void)lines.read_line(), std::logic_error);
  io::write(a, "short\n").get();
  EXPECT_EQ(pending.get(), "short");
  EXPECT_THROW(lines.read_line(1ms).get(), io::timed_out);
}

// A line of exactly max_line bytes is accepted, in one chunk or arriving
// byte by byte up to the limit.
TEST_F(IoLineReader, ALineOfExactlyTheLimitIsRead) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b, 16);
  io::write(a, std::string(16, 'a') + "\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), std::string(16, 'a'));
  io::write(a, std::string(16, 'b')).get();
  EXPECT_THROW(lines.read_line(1ms).get(), io::timed_out);  // 16 bytes, no newline yet: not too long
  io::write(a, "\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), std::string(16, 'b'));
}

// The oversized line arrives before its newline: read_line fails as soon as
// the line exceeds the limit, the reader drops the rest of it when it comes,
// and the next line is read normally.
TEST_F(IoLineReader, AfterAnOversizedLineTheNextLineIsRead) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b, 16);
  io::write(a, std::string(100, 'x')).get();
  expect_oversized(lines);
  EXPECT_EQ(lines.buffered(), 0u) << "the oversized part is not kept";
  io::write(a, "still the long line\nnext\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), "next");
  io::write(a, "and on\n").get();
  EXPECT_EQ(lines.read_line(5s).get(), "and on");
}

// The oversized line and the next one arrive in one chunk: the limit holds
// even though the newline is already there.
TEST_F(IoLineReader, AnOversizedLineInTheSameChunkAsTheNextIsRejected) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b, 16);
  io::write(a, std::string(40, 'y') + "\nok\n").get();
  expect_oversized(lines);
  EXPECT_EQ(lines.read_line(5s).get(), "ok");
}

// The stream ends inside an oversized line: what remains of it is dropped
// and the reader reports end of file.
TEST_F(IoLineReader, AnOversizedLastLineThenEndOfFile) {
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b, 16);
  io::write(a, std::string(100, 'z')).get();
  expect_oversized(lines);
  io::write(a, std::string(100, 'z')).get();
  a.shutdown_write();
  EXPECT_THROW(lines.read_line(5s).get(), io::end_of_file);
}

// co_read_line: read_line's outcomes, awaited in a co::task whose waits keep
// the operation in the coroutine's frame. The writer sends the rest of a
// line only once an operation is pending (io::stats), so the reader waits
// at least there.
namespace {

bool an_operation_pending() {
  return wait_until([] { return io::stats().pending_operations >= 1; });
}

// Reads lines until the stream ends; each outcome other than a line is
// recorded as "<exception name>".
co::task<std::vector<std::string>> read_all_co(io::line_reader& lines, io::deadline until) {
  std::vector<std::string> out;
  for (;;) {
    try {
      out.push_back(co_await lines.co_read_line(until));
    } catch (const io::end_of_file&) {
      co_return out;
    } catch (const io::error& e) {
      out.push_back("<error " + std::to_string(e.errno_value()) + ">");
    }
  }
}

}  // namespace

TEST_F(IoLineReader, CoReadLineSplitsAndJoinsChunksAcrossWaits) {
  promptly::runtime rt{workers(2)};
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b, 8);
  io::write(a, "one\ntw").get();  // "one" at once, "two" after a wait
  auto all = co::spawn(rt, read_all_co(lines, 10s));
  ASSERT_TRUE(an_operation_pending());
  io::write(a, "o\r\nthree\nmuch too long\nfou").get();
  ASSERT_TRUE(an_operation_pending());
  io::write(a, "r").get();
  a.shutdown_write();
  const std::vector<std::string> want{"one", "two\r", "three", "<error " + std::to_string(EMSGSIZE) + ">", "four"};
  EXPECT_EQ(all.get(), want);
}

TEST_F(IoLineReader, CoReadLineEndsOnDeadlineStopAndClose) {
  promptly::runtime rt{workers(2)};
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b);
  auto outcome = [&](io::deadline until, std::stop_token stop) -> co::task<std::string> {
    try {
      co_return co_await lines.co_read_line(until, stop);
    } catch (const io::timed_out&) {
      co_return "timed out";
    } catch (const io::cancelled&) {
      co_return "cancelled";
    } catch (const io::closed&) {
      co_return "closed";
    }
  };
  io::write(a, "par").get();
  EXPECT_EQ(co::spawn(rt, outcome(20ms, {})).get(), "timed out");
  EXPECT_EQ(lines.buffered(), 3u) << "a timed-out wait keeps the partial line";
  std::stop_source stop;
  auto stopped = co::spawn(rt, outcome(30s, stop.get_token()));
  ASSERT_TRUE(an_operation_pending());
  stop.request_stop();
  EXPECT_EQ(stopped.get(), "cancelled");
  std::stop_source stopped_before;
  stopped_before.request_stop();
  EXPECT_EQ(co::spawn(rt, outcome(30s, stopped_before.get_token())).get(), "cancelled");
  io::write(a, "t\n").get();
  EXPECT_EQ(co::spawn(rt, outcome(5s, {})).get(), "part");
  auto closed = co::spawn(rt, outcome(30s, {}));
  ASSERT_TRUE(an_operation_pending());
  b.close();
  EXPECT_EQ(closed.get(), "closed");
}

// One wait at a time per reader, as for read_line; an awaiter is awaited once.
namespace {

co::task<std::string> read_one_co(io::line_reader& lines, io::deadline until) {
  co_return co_await lines.co_read_line(until);
}

co::task<std::string> await_one_awaiter_twice_co(io::line_reader& lines) {
  auto awaiter = lines.co_read_line(5s);
  std::string first = co_await std::move(awaiter);
  co_return first + co_await std::move(awaiter);  // NOLINT(bugprone-use-after-move): what the test checks
}

}  // namespace

TEST_F(IoLineReader, CoReadLineKeepsTheOnePendingRule) {
  promptly::runtime rt{workers(2)};
  io::descriptor a, b;  // not a binding: clang 14 lambdas cannot capture those
  std::tie(a, b) = io::make_socket_pair();
  io::line_reader lines(b);
  auto waiting = co::spawn(rt, read_one_co(lines, 10s));
  ASSERT_TRUE(an_operation_pending());
  EXPECT_THROW(co::spawn(rt, read_one_co(lines, 10s)).get(), std::logic_error);
  EXPECT_THROW((void)lines.read_line(), std::logic_error);
  io::write(a, "only\nnext\n").get();
  EXPECT_EQ(waiting.get(), "only");
  EXPECT_THROW(co::spawn(rt, await_one_awaiter_twice_co(lines)).get(), std::logic_error);
}
