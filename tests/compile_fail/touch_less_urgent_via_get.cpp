// The same inversion through future::get(ctx) and a future read from a cell,
// three priorities apart.
// expect: priority inversion
// expect: priority_inversion_error<promptly::typed::touching<batch>, promptly::typed::from<ui> ?>
#include "promptly/typed.hpp"

struct ui {};
struct fetch {};
struct batch {};
using order = promptly::priority_order<promptly::chain<ui, fetch, batch>>;
namespace pt = promptly::typed;

pt::future_cell<int, batch> shared_result;

int on_click(pt::ctx<order, ui> c) { return shared_result.load().get(c); }
