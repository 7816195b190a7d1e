// Typed futures at run time: values, void, move-only results, exceptions,
// touching "no future"; the futures-and-state paper's email client (print and compress
// coordinate through a CAS on a per-email future_cell slot); a DAG whose
// futures live in a shared array (the futures-and-state paper, Sec. 1: "an initially empty
// array of future references").
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "promptly/typed.hpp"
#include "test_support.hpp"
#include "typed_support.hpp"

namespace {

namespace pt = promptly::typed;

// The email client's components, most urgent first (the futures-and-state paper, Sec. 5.1):
// event loop, send, sort, print/compress, check, shutdown.
struct event_loop {};
struct send {};
struct sort {};
struct mailbox {};  // print and compress run here
struct check {};
struct shutdown {};
using email_order = promptly::priority_order<promptly::chain<event_loop, send, sort, mailbox, check, shutdown>>;
template <class P>
using ectx = pt::ctx<email_order, P>;

}  // namespace

TEST(TypedFuture, ValuesVoidMoveOnlyAndExceptions) {
  promptly::runtime rt(typed_config(6));
  const std::string r = pt::run<email_order, shutdown>(rt, [](ectx<shutdown> c) {
    auto s = pt::fcreate<sort>(c, [](ectx<sort>, std::string a) { return a + "b"; }, std::string("a"));
    std::atomic<int> side{0};
    auto v = pt::fcreate<send>(c, [&side](ectx<send>) { side = 3; });
    auto m = pt::fcreate<mailbox>(c, [](ectx<mailbox>) { return std::make_unique<int>(4); });
    auto e = pt::fcreate<check>(c, [](ectx<check>) -> int { throw std::invalid_argument("bad"); });
    c.touch(v);
    std::unique_ptr<int> p = c.touch(std::move(m));
    EXPECT_THROW(c.touch(e), std::invalid_argument);
    EXPECT_THROW(e.get(c), std::invalid_argument);
    return c.touch(s) + std::to_string(side.load() + *p);
  });
  EXPECT_EQ(r, "ab7");
}

TEST(TypedFuture, TouchingNoFutureThrowsNamingThePriority) {
  promptly::runtime rt(typed_config(6));
  pt::run<email_order, shutdown>(rt, [](ectx<shutdown> c) {
    pt::future_cell<int, mailbox> empty_cell;
    pt::future<int, mailbox> none = empty_cell.load();  // reading an empty cell is a value
    EXPECT_FALSE(none.valid());
    EXPECT_FALSE(static_cast<bool>(none));
    try {
      c.touch(none);
      ADD_FAILURE() << "expected promptly::future_empty";
    } catch (const promptly::future_empty& e) {
      EXPECT_NE(std::string(e.what()).find("'mailbox' that holds no future"), std::string::npos) << e.what();
    }
  });
}

// fcreate_into stores the handle before the task can start: the body finds
// its own handle in the cell.
TEST(TypedFuture, FcreateIntoPublishesBeforeStart) {
  promptly::runtime rt(typed_config(6));
  const int n = under_tsan ? 50 : 500;
  const int seen_self = pt::run<email_order, shutdown>(rt, [](ectx<shutdown> c) {
    std::vector<pt::future_cell<int, sort>> cells(n);
    std::vector<pt::future<int, sort>> handles;
    for (int i = 0; i < n; ++i) {
      auto* cell = &cells[i];
      handles.push_back(pt::fcreate_into(c, *cell, [cell, i](ectx<sort>) { return cell->holds_future() ? i : -1; }));
      EXPECT_TRUE(handles.back() == cells[i].load());
    }
    int ok = 0;
    for (int i = 0; i < n; ++i) ok += c.touch(handles[i]) == i;
    return ok;
  });
  EXPECT_EQ(seen_self, n);
}

// The futures-and-state paper, Sec. 5.1, the email client: per email, a slot holds the handle
// of the latest print or compress operation. Each operation, first thing,
// CASes its own handle into the slot in place of the previous one's and
// touches that one, so the operations on one email run one at a time, in
// slot order. The event loop (most urgent) starts prints; the checker
// (less urgent than both) starts compressions; shutdown touches them all.
TEST(TypedFuture, EmailPrintAndCompressCoordinateThroughCas) {
  struct email {
    pt::future_cell<int, mailbox> slot;  // the latest operation; returns its id
    std::string text;
    bool compressed = false;
    int last_id = -1;                // written only by the operation holding the turn
    std::atomic<int> active{0};
  };
  const int emails = 8;
  const int ops_per_source = under_tsan ? 40 : 400;
  std::vector<email> box(emails);
  for (int i = 0; i < emails; ++i) box[i].text = "message " + std::to_string(i);
  promptly::runtime rt(typed_config(6));
  std::atomic<int> overlaps{0}, out_of_order{0}, bad_prints{0};

  // One operation on email e: the body of a print (compress == false) or a
  // compress task, at priority mailbox.
  auto operation = [&](ectx<mailbox> c, int e, int id, bool compress,
                       std::shared_ptr<pt::future_cell<int, mailbox>> self) {
    email& m = box[e];
    pt::future<int, mailbox> mine = self->load();  // published before this task started
    pt::future<int, mailbox> prev = m.slot.load();
    while (!m.slot.compare_exchange(prev, mine)) {
    }
    const int prev_id = prev ? c.touch(prev) : -1;  // wait for the earlier operation
    if (m.active.fetch_add(1) != 0) overlaps.fetch_add(1);
    if (m.last_id != prev_id) out_of_order.fetch_add(1);
    m.last_id = id;
    volatile unsigned spin = 0;  // hold the turn a while, so a broken protocol shows up as overlap
    for (int k = 0; k < 2000; ++k) spin = spin + static_cast<unsigned>(k);
    if (compress) {
      if (!m.compressed) {
        m.text = std::string(m.text.rbegin(), m.text.rend());  // "Huffman"
        m.compressed = true;
      }
    } else {
      const std::string plain = m.compressed ? std::string(m.text.rbegin(), m.text.rend()) : m.text;
      if (plain != "message " + std::to_string(e)) bad_prints.fetch_add(1);
      if (m.compressed) {  // printing uncompresses
        m.text = plain;
        m.compressed = false;
      }
    }
    m.active.fetch_sub(1);
    return id;
  };

  // Starts one operation: its handle goes into its own cell before it runs.
  auto start = [&](const auto& c, int e, int id, bool compress) {
    auto self = std::make_shared<pt::future_cell<int, mailbox>>();
    return pt::fcreate_into(c, *self, operation, e, id, compress, self);
  };

  const int touched = pt::run<email_order, shutdown>(rt, [&](ectx<shutdown> c) {
    auto prints = pt::fcreate<event_loop>(c, [&](ectx<event_loop> c) {
      std::vector<pt::future<int, mailbox>> ops;
      for (int i = 0; i < ops_per_source; ++i) ops.push_back(start(c, i % emails, 2 * i, false));
      return ops;  // the event loop never touches them: mailbox is less urgent
    });
    auto compressions = pt::fcreate<check>(c, [&](ectx<check> c) {
      std::vector<pt::future<int, mailbox>> ops;
      for (int i = 0; i < ops_per_source; ++i) ops.push_back(start(c, (i * 3) % emails, 2 * i + 1, true));
      for (auto& op : ops) c.touch(op);  // the checker may wait: mailbox is more urgent than check
      return ops;
    });
    int n = 0;
    for (auto& op : c.touch(prints)) n += c.touch(op) >= 0;
    for (auto& op : c.touch(compressions)) n += c.touch(op) >= 0;
    return n;
  });
  EXPECT_EQ(touched, 2 * ops_per_source);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(out_of_order.load(), 0);
  EXPECT_EQ(bad_prints.load(), 0);
}

// A DAG in a shared array (the futures-and-state paper, Sec. 1): grid[i][j] counts the monotone
// lattice paths to (i, j) by touching the futures of its upper and left
// neighbours, which it finds in the array. Tasks are created in row-major
// order, each stored into its cell before it can start, so every handle a
// task reads is already there (the futures-and-state paper, Sec. 4.2, rule 2). Afterwards tasks
// of a less urgent priority touch random cells of the array.
TEST(TypedFuture, DagWithFuturesInASharedArray) {
  struct grid_prio {};
  struct reader {};
  using order = promptly::priority_order<promptly::before<grid_prio, reader>>;
  using gctx = pt::ctx<order, grid_prio>;
  using rctx = pt::ctx<order, reader>;
  const int n = under_tsan ? 8 : 14;
  std::vector<pt::future_cell<long, grid_prio>> grid(static_cast<std::size_t>(n * n));
  auto cell = [&](int i, int j) -> pt::future_cell<long, grid_prio>& { return grid[static_cast<std::size_t>(i * n + j)]; };

  promptly::runtime rt(typed_config(2));
  const long corner = pt::run<order, reader>(rt, [&](rctx c) {
    pt::fcreate<grid_prio>(c, [&](gctx c) {
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          pt::fcreate_into(c, cell(i, j), [&cell, i, j](gctx c) -> long {
            if (i == 0 || j == 0) return 1;
            return c.touch(cell(i - 1, j).load()) + c.touch(cell(i, j - 1).load());
          });
        }
      }
    }).get(c);
    // Less urgent readers touch the shared array in scattered order.
    std::vector<pt::future<long, reader>> readers;
    for (int r = 0; r < n; ++r) {
      readers.push_back(pt::fcreate<reader>(c, [&cell, r, size = n](rctx c) {
        long sum = 0;
        for (int k = 0; k < size; ++k) sum += c.touch(cell((r * 7 + k) % size, (k * 5 + r) % size).load());
        return sum;
      }));
    }
    long checksum = 0;
    for (auto& f : readers) checksum += c.touch(f);
    long expected = 0;
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < n; ++k) {
        const int i = (r * 7 + k) % n, j = (k * 5 + r) % n;
        long binom = 1;  // C(i + j, i)
        for (int t = 1; t <= i; ++t) binom = binom * (j + t) / t;
        expected += binom;
      }
    EXPECT_EQ(checksum, expected);
    return c.touch(cell(n - 1, n - 1).load());
  });
  long binom = 1;  // C(2n - 2, n - 1)
  for (int t = 1; t <= n - 1; ++t) binom = binom * (n - 1 + t) / t;
  EXPECT_EQ(corner, binom);
}
