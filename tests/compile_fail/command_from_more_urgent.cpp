// A command function declared at low cannot be called directly from code at
// high: it would run at high and may touch futures of low (seed 003 Sec.
// 4.2, last rule). Create it with fcreate<low> instead.
// expect: ctx<[^>]*high>' to 'ctx<[^>]*low>'
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

int compress(pt::ctx<order, low>) { return 0; }

int handler(pt::ctx<order, high> c) { return compress(c); }
