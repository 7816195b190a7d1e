// A line reader over a stream descriptor (socket, pipe): the helper every
// line-oriented protocol needs (an echo server reads a line of text and
// writes it back).
//
//   io::line_reader lines(conn);
//   for (;;) {
//     std::string l = lines.read_line(5s).get();   // parks the task
//     io::write(conn, l + "\n").get();
//   }
//
// read_line() completes with the next line without its '\n' (a '\r' before
// it is kept). Bytes after the line stay buffered for the next call. At the
// end of the stream a final unterminated line is returned first; after that
// read_line throws io::end_of_file. The deadline covers the whole line.
//
// Lines longer than max_line bytes (not counting the '\n'): the read_line
// that meets one fails with io::error (EMSGSIZE) as soon as the line is
// known to be too long, without waiting for its end. The reader drops that
// line, up to and including its '\n' (even the part still to arrive), and
// the next read_line returns the line after it: a client that sent one long
// line can go on. (If the stream ends inside the long line, the next
// read_line throws io::end_of_file.) A program that rather ends the
// connection closes it on EMSGSIZE.
//
// One read_line may be pending per reader at a time; the reader may be
// destroyed while one is pending (the operation keeps what it needs). The
// descriptor must outlive the reader's calls.
#pragma once

#include <cstddef>
#include <memory>
#include <stop_token>
#include <string>

#include "promptly/future.hpp"
#include "promptly/io/deadline.hpp"
#include "promptly/io/descriptor.hpp"

namespace promptly::io {

class line_reader {
 public:
  static constexpr std::size_t default_max_line = 64 * 1024;

  // max_line: the longest line read_line returns, in bytes without the '\n'.
  explicit line_reader(descriptor& d, std::size_t max_line = default_max_line);
  line_reader(line_reader&&) noexcept = default;
  ~line_reader();

  // Throws std::logic_error if a read_line of this reader is still pending.
  [[nodiscard]] future<std::string> read_line(deadline until = {}, std::stop_token stop = {});

  // Bytes received after the last line returned (not yet a full line; the
  // dropped part of an oversized line is not counted).
  std::size_t buffered() const noexcept;

  struct state;  // shared with a pending read_line (src/io/line_reader.cpp)

 private:
  descriptor* d_;
  std::shared_ptr<state> state_;
};

}  // namespace promptly::io
