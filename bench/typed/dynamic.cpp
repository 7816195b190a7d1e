// bench/typed: the program of typed.cpp with the dynamic priority API
// (priorities parsed at run time; rule TOUCH checked at each touch, throwing
// promptly::priority_inversion). levels.cpp compiles this file with
// PROMPTLY_BENCH_PLAIN_LEVELS: plain levels and futures, nothing checked.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "promptly/future_cell.hpp"
#include "promptly/promise.hpp"

#ifdef PROMPTLY_BENCH_PLAIN_LEVELS
#include "promptly/promptly.hpp"
#else
#include "promptly/typed/dynamic_order.hpp"
#endif

namespace {

using namespace email_bench;

#ifdef PROMPTLY_BENCH_PLAIN_LEVELS
using priority = promptly::level;
const priority event_loop{0}, sender{1}, sorter{2}, mailbox{3}, checker{4}, shutdown{5};
constexpr unsigned priority_count = 6;
using handle = promptly::future<long>;
template <class F>
auto create(priority p, F&& f) {
  return promptly::async(p, std::forward<F>(f));
}
const promptly::future<long>& untyped(const handle& f) { return f; }
template <class F>
auto run_at(promptly::runtime& rt, priority p, F&& f) {
  return rt.run(p, std::forward<F>(f));
}
#else
const promptly::dynamic_priority_order order =
    promptly::dynamic_priority_order::parse("event_loop > sender > sorter > mailbox > checker > shutdown");
using priority = promptly::dynamic_priority;
const priority event_loop = order["event_loop"], sender = order["sender"], sorter = order["sorter"],
               mailbox = order["mailbox"], checker = order["checker"], shutdown = order["shutdown"];
const unsigned priority_count = order.size();
using handle = promptly::dynamic_future<long>;
template <class F>
auto create(const priority& p, F&& f) {
  return order.fcreate(p, std::forward<F>(f));
}
const promptly::future<long>& untyped(const handle& f) { return f.untyped(); }
template <class F>
auto run_at(promptly::runtime& rt, const priority& p, F&& f) {
  return order.run(rt, p, std::forward<F>(f));
}
#endif

struct email {
  promptly::future_cell<long> slot;  // the latest print or compress
  std::string text;
  bool compressed = false;
};
std::vector<std::vector<email>> boxes;

// One print or compress. These APIs cannot publish a handle before the task
// starts, so an operation learns its own handle through a promise its
// creator completes.
long operation(int user, int id, bool compress, promptly::future<promptly::future<long>> my_handle) {
  email& e = boxes[user][id];
  promptly::future<long> mine = std::move(my_handle).get();
  promptly::future<long> prev = e.slot.load();
  while (!e.slot.compare_exchange(prev, mine)) {
  }
  if (prev.valid()) prev.get();
  return mail_work(e.text, e.compressed, compress);
}

handle start_operation(int user, int id, bool compress) {
  promptly::promise<promptly::future<long>> own;
  handle f = create(mailbox, [user, id, compress, h = own.get_future()]() mutable {
    return operation(user, id, compress, std::move(h));
  });
  own.set_value(untyped(f));
  return f;
}

long sort_inbox(int user) {
  auto sent = create(sender, [user] { return send_work(user, 0); });
  return sort_work(user) + sent.get();
}

struct handled {
  std::vector<handle> sends, sorts, prints;
};

handled event_loop_body() {
  handled h;
  for (int r = 0; r < requests; ++r) {
    const int user = r % users, id = (r / users) % emails_per_user;
    switch (r % 3) {
      case 0: h.sends.push_back(create(sender, [user, id] { return send_work(user, id); })); break;
      case 1: h.sorts.push_back(create(sorter, [user] { return sort_inbox(user); })); break;
      default: h.prints.push_back(start_operation(user, id, false)); break;
    }
  }
  return h;
}

long checker_body() {
  std::vector<handle> ops;
  for (int r = 0; r < requests / 2; ++r) ops.push_back(start_operation(r % users, (r * 5) % emails_per_user, true));
  long sum = 0;
  for (auto& op : ops) sum += op.get();
  return sum;
}

long main_body() {
  auto loop = create(event_loop, event_loop_body);
  auto check = create(checker, checker_body);
  long sum = check.get();
  handled h = std::move(loop).get();
  for (auto& f : h.sends) sum += f.get();
  for (auto& f : h.sorts) sum += f.get();
  for (auto& f : h.prints) f.get();
  return sum + static_cast<long>(h.prints.size());
}

}  // namespace

int main() {
  fill_mailboxes(boxes);
  promptly::runtime_config cfg;
  cfg.levels = priority_count;
  promptly::runtime rt(cfg);
  std::printf("checksum %ld\n", run_at(rt, shutdown, main_body));
}
