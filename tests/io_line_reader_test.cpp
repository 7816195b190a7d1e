// The line reader: lines split across and joined within chunks, partial
// lines kept across a timeout, the one-pending rule, and lines longer than
// the limit: they fail with EMSGSIZE, are discarded up to their newline, and
// the reader goes on with the next line.
#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <tuple>

#include "io_test_support.hpp"

using namespace io_test;

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
