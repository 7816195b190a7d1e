// A command function declared at low cannot be called directly from code at
// high: it would run at high and may touch futures of low (the
// futures-and-state paper, Sec. 4.2, last rule). Create it with fcreate<low>
// instead. The diagnostic says it is a priority inversion and names both.
// (gcc names the deleted constructor with its parameter types and template arguments; clang
// names both ctx types; both quote the constructor's line, comment included.)
// expect: priority_inversion_error<(promptly::typed::)?calling<P>, (promptly::typed::)?from<P2> ?>
// expect: (P2 = high|from 'ctx<[^>]*high>')
// expect: (P = low|to 'ctx<[^>]*low>')
// expect: priority inversion: code at P2 calls a command declared at P
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

int compress(pt::ctx<order, low>) { return 0; }

int handler(pt::ctx<order, high> c) { return compress(c); }
