// A continuation at ui of a future at low would make ui work wait for low work: rule TOUCH
// with the continuation's priority as the toucher (docs/futures.md).
// expect: priority inversion
// expect: priority_inversion_error<promptly::typed::touching<low>, promptly::typed::from<high> ?>
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

int handler(pt::ctx<order, low> c) {
  auto background = pt::fcreate<low>(c, [] { return 42; });
  auto urgent = pt::then<high>(c, background, [](pt::ctx<order, high>, const int& v) { return v + 1; });
  return c.touch(urgent);
}
