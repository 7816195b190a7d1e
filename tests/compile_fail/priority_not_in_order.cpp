// A future of a priority the order does not declare cannot be touched.
// expect: priority_not_in_order_error<stranger,
#include "promptly/typed.hpp"

struct high {};
struct low {};
struct stranger {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

pt::future_cell<int, stranger> cell;

int handler(pt::ctx<order, low> c) { return c.touch(cell.load()); }
