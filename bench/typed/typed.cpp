// bench/typed: the email-like program of the futures-and-state paper, Sec. 5.1 written with the
// typed priority API (priorities are types; rule TOUCH is checked by the
// compiler). dynamic.cpp is the same program with run-time priorities, and
// levels.cpp with plain levels; measure.py compares their compile time and
// binary size (the futures-and-state paper (PLDI 2020) Table 1). All three print the same checksum.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "promptly/typed.hpp"

namespace {

using namespace email_bench;
namespace pt = promptly::typed;

struct event_loop {};
struct sender {};
struct sorter {};
struct mailbox {};  // print and compress
struct checker {};
struct shutdown {};
using order = promptly::priority_order<promptly::chain<event_loop, sender, sorter, mailbox, checker, shutdown>>;
template <class P>
using ctx = pt::ctx<order, P>;

struct email {
  pt::future_cell<long, mailbox> slot;  // the latest print or compress
  std::string text;
  bool compressed = false;
};
std::vector<std::vector<email>> boxes;

// One print or compress: swap own handle into the email's slot with a CAS,
// wait for the operation it displaced, then work.
long operation(ctx<mailbox> c, int user, int id, bool compress, std::shared_ptr<pt::future_cell<long, mailbox>> self) {
  email& e = boxes[user][id];
  pt::future<long, mailbox> mine = self->load();  // stored before this task started
  pt::future<long, mailbox> prev = e.slot.load();
  while (!e.slot.compare_exchange(prev, mine)) {
  }
  if (prev) c.touch(prev);
  return mail_work(e.text, e.compressed, compress);
}

template <class P>
pt::future<long, mailbox> start_operation(ctx<P> c, int user, int id, bool compress) {
  auto self = std::make_shared<pt::future_cell<long, mailbox>>();
  return pt::fcreate_into(c, *self, operation, user, id, compress, self);
}

long send_email(ctx<sender>, int user, int id) { return send_work(user, id); }

long sort_inbox(ctx<sorter> c, int user) {
  auto sent = pt::fcreate<sender>(c, send_email, user, 0);  // sorting waits for a send: more urgent
  return sort_work(user) + c.touch(sent);
}

struct handled {
  std::vector<pt::future<long, sender>> sends;
  std::vector<pt::future<long, sorter>> sorts;
  std::vector<pt::future<long, mailbox>> prints;
};

handled event_loop_body(ctx<event_loop> c) {
  handled h;
  for (int r = 0; r < requests; ++r) {
    const int user = r % users, id = (r / users) % emails_per_user;
    switch (r % 3) {
      case 0: h.sends.push_back(pt::fcreate<sender>(c, send_email, user, id)); break;
      case 1: h.sorts.push_back(pt::fcreate<sorter>(c, sort_inbox, user)); break;
      default: h.prints.push_back(start_operation(c, user, id, false)); break;
    }
  }
  return h;  // the event loop touches none: they are all less urgent
}

long checker_body(ctx<checker> c) {
  std::vector<pt::future<long, mailbox>> ops;
  for (int r = 0; r < requests / 2; ++r) ops.push_back(start_operation(c, r % users, (r * 5) % emails_per_user, true));
  long sum = 0;
  for (auto& op : ops) sum += c.touch(op);
  return sum;
}

long main_body(ctx<shutdown> c) {
  auto loop = pt::fcreate<event_loop>(c, event_loop_body);
  auto check = pt::fcreate<checker>(c, checker_body);
  long sum = c.touch(check);
  handled h = c.touch(std::move(loop));
  for (auto& f : h.sends) sum += c.touch(f);
  for (auto& f : h.sorts) sum += c.touch(f);
  for (auto& f : h.prints) f.get(c);  // printed checksums depend on the interleaving; count only
  return sum + static_cast<long>(h.prints.size());
}

}  // namespace

int main() {
  fill_mailboxes(boxes);
  promptly::runtime_config cfg;
  cfg.levels = order::size;
  promptly::runtime rt(cfg);
  std::printf("checksum %ld\n", pt::run<order, shutdown>(rt, main_body));
}
