// A partial order: mid_a and mid_b are unrelated, so neither may touch the
// other's futures, although the linearisation puts mid_a at a more urgent
// level than mid_b.
// expect: priority inversion
// expect: priority_inversion_error<promptly::typed::touching<mid_b>, promptly::typed::from<mid_a> ?>
#include "promptly/typed.hpp"

struct high {};
struct mid_a {};
struct mid_b {};
struct low {};
using order = promptly::priority_order<promptly::before<high, mid_a>, promptly::before<high, mid_b>,
                                       promptly::before<mid_a, low>, promptly::before<mid_b, low>>;
namespace pt = promptly::typed;

int work(pt::ctx<order, mid_a> c) {
  auto other = pt::fcreate<mid_b>(c, [](pt::ctx<order, mid_b>) { return 1; });
  return c.touch(other);
}
