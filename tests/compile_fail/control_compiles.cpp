// Control: correct typed code that must compile, so that a broken harness
// (or an over-eager checker) fails this case.
// expect-compile: success
#include "promptly/typed.hpp"

struct high {};
struct mid_a {};
struct mid_b {};
struct low {};
using order = promptly::priority_order<promptly::chain<high, mid_a, low>, promptly::chain<high, mid_b, low>>;
template <class P>
using ctx = promptly::typed::ctx<order, P>;
namespace pt = promptly::typed;

int command_at_mid_a(ctx<mid_a> c) { return static_cast<int>(c.level); }

int body(ctx<low> c) {
  auto h = pt::fcreate<high>(c, [](ctx<high>) { return 1; });
  auto a = pt::fcreate<mid_a>(c, [h](ctx<mid_a> c) { return c.touch(h) + command_at_mid_a(c); });
  pt::future_cell<int, mid_b> cell;
  auto b = pt::fcreate_into(c, cell, [](ctx<mid_b> c) { return static_cast<int>(c.level); });
  auto l = pt::fcreate<low>(c, [](ctx<low>) { return 3; });
  return c.touch(h) + a.get(c) + c.touch(cell.load()) + b.get(c) + c.touch(l) + command_at_mid_a(c);
}

int main() {
  promptly::runtime rt;
  return pt::run<order, low>(rt, body) > 0 ? 0 : 1;
}
