// Rule TOUCH (the futures-and-state paper, Sec. 3.1): code at high may not touch a future of low.
// expect: priority inversion
// expect: priority_inversion_error<promptly::typed::touching<low>, promptly::typed::from<high> ?>
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

int handler(pt::ctx<order, high> c) {
  auto background = pt::fcreate<low>(c, [](pt::ctx<order, low>) { return 42; });
  return c.touch(background);
}
