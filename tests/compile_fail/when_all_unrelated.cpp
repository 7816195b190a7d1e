// when_all of futures at unrelated priorities has no least urgent input priority to give its
// result: the caller must name one (rule TOUCH, docs/futures.md).
// expect: no least
// expect: combined_priority_error<fetch, log>
#include "promptly/typed.hpp"

struct ui {};
struct fetch {};
struct log {};
struct batch {};
using order = promptly::priority_order<promptly::chain<ui, fetch, batch>, promptly::chain<ui, log, batch>>;
namespace pt = promptly::typed;

int handler(pt::ctx<order, batch> c) {
  auto a = pt::fcreate<fetch>(c, [] { return 1; });
  auto b = pt::fcreate<log>(c, [] { return 2; });
  auto both = pt::when_all(c, a, b);
  (void)both;
  return 0;
}
