// Instantiates the public templates once each, compiled (never run) with the header check's
// flags (-Wall -Wextra -Wpedantic -Wshadow -Werror): a warning in a template body only shows
// when the template is instantiated, which including the header alone never does.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "promptly/io.hpp"
#include "promptly/promptly.hpp"
#include "promptly/typed.hpp"
#include "promptly/typed/io.hpp"

namespace header_check {

struct ui {};
struct batch {};
using order = promptly::priority_order<promptly::before<ui, batch>>;

int fork_join_and_loops() {
  auto [a, b] = promptly::join([] { return 1; }, [] {});
  std::vector<int> v(8, a);
  promptly::parallel_for(0, v.size(), 2, [&](std::size_t i) { v[i] += 1; });
  promptly::parallel_for(promptly::index_range(0, v.size()), 2, [&](promptly::index_range<std::size_t> r) {
    for (std::size_t i : r) v[i] *= 2;
  });
  (void)b;
  return promptly::parallel_reduce(0, v.size(), 2, 0, [&](std::size_t i) { return v[i]; }, std::plus<>{});
}

int algorithms() {
  std::vector<int> v{3, 1, 2};
  promptly::parallel_sort(v);
  promptly::parallel_sort(v.begin(), v.end(), std::greater<>{});
  promptly::parallel_stable_sort(v, std::ranges::less{}, [](int x) { return -x; });
  promptly::parallel_stable_sort(v.begin(), v.end(), [](int a, int b) { return a < b; });
  std::vector<long> out(v.size());
  promptly::parallel_inclusive_scan(v.begin(), v.end(), out.begin());
  promptly::parallel_inclusive_scan(v.begin(), v.end(), out.begin(), std::plus<>{}, 1L);
  promptly::parallel_exclusive_scan(v, out.begin(), 0L);
  promptly::parallel_transform_inclusive_scan(v, out.begin(), std::plus<>{}, [](int x) { return long{x} * x; });
  promptly::parallel_transform_exclusive_scan(v.begin(), v.end(), out.begin(), 0L, std::plus<>{}, [](int x) { return long{x}; });
  int a = 0;
  promptly::parallel_invoke([&] { a += 1; }, [] {}, [] {});
  promptly::parallel_for(promptly::index_box(promptly::index_range(0, 4), promptly::index_range(0, 4)), 2,
                         [&](const promptly::index_box<int, 2>& b) { a += static_cast<int>(b.size()); });
  return a + static_cast<int>(out[0]);
}

int futures_and_groups() {
  promptly::task_group tg;
  tg.spawn([] {});
  tg.wait();
  promptly::future<int> f = promptly::async([] { return 2; });
  promptly::future<std::unique_ptr<int>> m = promptly::async([] { return std::make_unique<int>(3); });
  promptly::promise<int> p;
  promptly::future<int> q = p.get_future();
  p.set_value(4);
  promptly::future_cell<int> cell;
  cell.store(f);
  return f.get() + *std::move(m).get() + q.get() + cell.load().get();
}

int cancellation_and_combinators() {
  std::stop_source stop;
  promptly::task_group tg(stop.get_token());
  tg.spawn([] {});
  tg.cancel();
  promptly::task_group inner(tg.get_token());
  const bool canceled = tg.wait() == promptly::task_group_status::canceled && inner.wait() == promptly::task_group_status::complete;
  std::vector<int> v{3, 1, 2};
  std::vector<long> out(v.size());
  promptly::parallel_for(stop.get_token(), 0, v.size(), [&](std::size_t i) { v[i] += 1; });
  promptly::parallel_sort(stop.get_token(), v);
  promptly::parallel_stable_sort(stop.get_token(), v.begin(), v.end(), std::greater<>{});
  promptly::parallel_inclusive_scan(stop.get_token(), v.begin(), v.end(), out.begin());
  const long r = promptly::parallel_reduce(stop.get_token(), 0, 3, 0L, [](int i) { return long{i}; }, std::plus<>{});
  promptly::future<int> f = promptly::async([] { return 2; });
  const bool ready = f.wait_for(std::chrono::milliseconds(1)) == promptly::future_status::ready &&
                     f.wait_until(std::chrono::system_clock::now()) == promptly::future_status::ready;
  auto g = f.then([](const int& x) { return x + 1; }).then(promptly::level{1}, [](promptly::future<int> y) { return y.get(); });
  auto all = promptly::when_all(f, g);
  std::vector<promptly::future<int>> fs{f, g};
  auto any = promptly::when_any(fs.begin(), fs.end());
  return static_cast<int>(r) + canceled + ready + std::get<1>(all.get()).get() + static_cast<int>(any.get().index);
}

int typed_combinators(promptly::runtime& rt) {
  namespace pt = promptly::typed;
  return pt::run<order, batch>(rt, [](pt::ctx<order, batch> c) {
    auto f = pt::fcreate<ui>(c, [] { return 5; });
    auto h = pt::fcreate<batch>(c, [] { return 6; });
    auto all = pt::when_all(c, f, h);
    auto any = pt::when_any<batch>(c, f, h);
    auto next = pt::then(c, f, [](pt::ctx<order, ui>, const int& x) { return x + 1; });
    return std::get<0>(c.touch(all)).get(c) + static_cast<int>(c.touch(any).index) + c.touch(next);
  });
}

void graphs(promptly::runtime& rt) {
  promptly::graph g("check");
  auto [x, y] = g.emplace([] {}, [] {});
  x.precede(y);
  promptly::graph_run run = g.run(rt);
  run.get();
}

int typed_priorities(promptly::runtime& rt) {
  namespace pt = promptly::typed;
  return pt::run<order, batch>(rt, [](pt::ctx<order, batch> c) {
    auto f = pt::fcreate<ui>(c, [](pt::ctx<order, ui>) { return 5; });
    pt::future_cell<int, ui> cell(f);
    return c.touch(f) + c.touch(cell.load());
  });
}

int dynamic_priorities(promptly::runtime& rt) {
  const auto o = promptly::dynamic_priority_order::parse("ui > batch");
  return o.run(rt, o["batch"], [&o] { return o.fcreate(o["ui"], [] { return 6; }).get(); });
}

std::size_t typed_io(promptly::runtime& rt) {
  namespace pt = promptly::typed;
  return pt::run<order, batch>(rt, [](pt::ctx<order, batch> c) {
    auto sockets = promptly::io::make_socket_pair();
    c.touch(pt::io::sleep_for(c, std::chrono::milliseconds(1)));
    return c.touch(pt::io::write<ui>(c, sockets.first, std::string_view("x")));
  });
}

void io(promptly::runtime& rt) {
  promptly::io::listener l = promptly::io::listener::tcp("127.0.0.1", 0);
  promptly::future<void> a = l.serve(rt, [](promptly::io::descriptor) {});
  promptly::future<void> b = l.serve(rt, [](promptly::io::descriptor, std::stop_token) {});
  l.close();
  a.get();
  b.get();
}

}  // namespace header_check
