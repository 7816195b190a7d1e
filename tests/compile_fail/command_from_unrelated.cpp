// In a partial order, a command declared at one branch (log) cannot be called
// from code at an unrelated branch (fetch): neither is more urgent, so the
// call could make fetch wait on log's futures. The diagnostic says it is a
// priority inversion and names both priorities.
// expect: priority_inversion_error<(promptly::typed::)?calling<P>, (promptly::typed::)?from<P2> ?>
// expect: (P2 = fetch|from 'ctx<[^>]*fetch>')
// expect: (P = log|to 'ctx<[^>]*log>')
// expect: priority inversion: code at P2 calls a command declared at P
#include "promptly/typed.hpp"

struct ui {};
struct fetch {};
struct log {};
using order = promptly::priority_order<promptly::before<ui, fetch>, promptly::before<ui, log>>;
namespace pt = promptly::typed;

void write_log(pt::ctx<order, log>) {}

void on_reply(pt::ctx<order, fetch> c) { write_log(c); }
