// Typed I/O (promptly/typed/io.hpp): I/O operations return typed futures at the caller's
// priority or a named one, are touched under rule TOUCH, fit typed cells, and rethrow
// io errors, and the run-time detector counts touches of them that get around the types. The
// compile-time side (touching an I/O future of a less urgent priority) is
// tests/compile_fail/io_touch_less_urgent.cpp.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

#include "io_test_support.hpp"
#include "promptly/typed.hpp"
#include "promptly/typed/io.hpp"
#include "typed_support.hpp"

namespace {

using namespace std::chrono_literals;
namespace pt = promptly::typed;
namespace tio = promptly::typed::io;
namespace io = promptly::io;

struct ui {};
struct batch {};
using order = promptly::priority_order<promptly::chain<ui, batch>>;  // ui > batch
template <class P>
using ctx = pt::ctx<order, P>;

// The types, without running anything.
template <class P>
using read_t = decltype(tio::read(std::declval<const ctx<P>&>(), std::declval<io::descriptor&>(),
                                  std::declval<std::span<char>>()));
static_assert(std::is_same_v<read_t<batch>, pt::future<std::size_t, batch>>, "defaults to the caller's priority");
static_assert(std::is_same_v<decltype(tio::write<ui>(std::declval<const ctx<batch>&>(), std::declval<io::descriptor&>(),
                                                     std::string_view())),
                             pt::future<std::size_t, ui>>,
              "a named priority");
static_assert(std::is_same_v<decltype(tio::sleep_for(std::declval<const ctx<ui>&>(), 1ms)), pt::future<void, ui>>);
static_assert(std::is_same_v<decltype(tio::accept(std::declval<const ctx<ui>&>(), std::declval<io::descriptor&>())),
                             pt::future<io::descriptor, ui>>);

}  // namespace

TEST(TypedIo, OperationsAtTheCallersAndANamedPriorityAreTouchedUnderTouch) {
  io_test::within(60s, "TypedIo.Operations", [] {
    promptly::runtime rt{typed_config(2)};
    const std::string got = pt::run<order, batch>(rt, [](ctx<batch> c) {
      auto [a, b] = io::make_socket_pair();
      // Written at ui (more urgent than batch: batch code may touch it), read at batch.
      pt::future<std::size_t, ui> sent = tio::write<ui>(c, a, std::string_view("ping"));
      EXPECT_EQ(c.touch(sent), 4u);
      std::string buf(4, '\0');
      pt::future<std::size_t, batch> got_n = tio::read(c, b, std::span<char>(buf));
      EXPECT_EQ(c.touch(got_n), 4u);
      c.touch(tio::sleep_for(c, 1ms));
      return buf;
    });
    EXPECT_EQ(got, "ping");
  });
}

TEST(TypedIo, AnIoFutureGoesThroughATypedCellToLessUrgentCode) {
  io_test::within(60s, "TypedIo.Cell", [] {
    promptly::runtime rt{typed_config(2)};
    const std::size_t n = pt::run<order, batch>(rt, [](ctx<batch> c) {
      auto sockets = io::make_socket_pair();
      io::descriptor& a = sockets.first;
      io::descriptor& b = sockets.second;
      pt::future_cell<std::size_t, ui> cell;
      // Code at ui starts the write and publishes its future; batch code touches it.
      auto writer = pt::fcreate<ui>(c, [&cell, &a](ctx<ui> u) { cell.store(tio::write(u, a, std::string_view("xy"))); });
      c.touch(writer);
      const std::size_t written = c.touch(cell.load());
      std::string buf(2, '\0');
      (void)c.touch(tio::read(c, b, std::span<char>(buf)));
      EXPECT_EQ(buf, "xy");
      return written;
    });
    EXPECT_EQ(n, 2u);
  });
}

TEST(TypedIo, TheTouchRethrowsTheOperationsError) {
  io_test::within(60s, "TypedIo.Errors", [] {
    promptly::runtime rt{typed_config(2)};
    pt::run<order, ui>(rt, [](ctx<ui> c) {
      auto [a, b] = io::make_socket_pair();
      a.close();
      std::string buf(1, '\0');
      auto f = tio::read(c, b, std::span<char>(buf));
      EXPECT_THROW((void)c.touch(f), io::end_of_file);
      // A deadline that has passed: the read of a pipe nobody writes times out.
      auto pipe = io::make_pipe();
      auto late = tio::read<batch>(c, pipe.first, std::span<char>(buf), io::deadline(1ms));
      EXPECT_THROW((void)std::move(late).untyped().get(), io::timed_out);  // ui may not touch batch: untyped
    });
  });
}

namespace {
// docs/typed-priorities.md, "I/O at a priority".
int relay(ctx<batch> c, promptly::io::descriptor& in, promptly::io::descriptor& out) {
  std::array<char, 512> buf;
  auto n = tio::read(c, in, std::span(buf));  // typed::future<std::size_t, batch>
  auto ack = tio::write<ui>(c, out, "ok");    // typed::future<std::size_t, ui>
  return static_cast<int>(c.touch(n) + c.touch(ack));
}
}  // namespace

TEST(TypedIo, DocsExample) {
  io_test::within(60s, "TypedIo.DocsExample", [] {
    promptly::runtime rt{typed_config(2)};
    auto in = io::make_socket_pair();
    auto out = io::make_socket_pair();
    io::write(in.second, std::string_view("abc")).get();
    const int moved = pt::run<order, batch>(rt, [&](ctx<batch> c) { return relay(c, in.first, out.first); });
    EXPECT_EQ(moved, 3 + 2);
    EXPECT_EQ(io_test::read_exactly(out.second, 2), "ok");
  });
}

// The detector (runtime_config::detect_inversions) sees a typed I/O future: touched around
// the types (through untyped()) from code more urgent than the priority it was declared at,
// it counts like a task's future of that priority; touches TOUCH allows count nothing.
TEST(TypedIo, TheDetectorSeesIoFuturesTouchedAroundTheTypes) {
  io_test::within(60s, "TypedIo.Detector", [] {
    promptly::runtime rt{typed_config(2, true)};
    auto sockets = io::make_socket_pair();
    pt::run<order, ui>(rt, [&sockets](ctx<ui> c) {
      // The detector counts a touch whether or not the future is ready yet.
      auto sent = tio::write<batch>(c, sockets.second, std::string_view("x"));
      EXPECT_EQ(std::move(sent).untyped().get(), 1u);  // ui waits on batch: an inversion
      EXPECT_EQ(c.touch(tio::write(c, sockets.first, std::string_view("z"))), 1u);  // ui on ui: fine
      std::string buf(1, '\0');
      auto got = tio::read<batch>(c, sockets.second, std::span<char>(buf));
      EXPECT_EQ(got.untyped().get(), 1u);  // ui waits on batch again
      EXPECT_EQ(buf, "z");
    });
    pt::run<order, batch>(rt, [&sockets](ctx<batch> c) {
      (void)c.touch(tio::write<ui>(c, sockets.first, std::string_view("w")));  // batch on ui: fine
      (void)c.touch(tio::write(c, sockets.first, std::string_view("y")));  // batch on batch: fine
    });
    const promptly::inversion_stats s = rt.inversions();
    EXPECT_EQ(s.total, 2u);
    ASSERT_EQ(s.pairs.size(), 1u);
    EXPECT_EQ(s.pairs[0].toucher_level, order::level_of<ui>);
    EXPECT_EQ(s.pairs[0].touched_level, order::level_of<batch>);
    EXPECT_EQ(s.pairs[0].count, 2u);
    EXPECT_EQ(order::name_of_level(s.pairs[0].touched_level), "batch");
  });
}
