// A coroutine task cannot co_await a typed future without its ctx: that
// would skip rule TOUCH (promptly/co/typed.hpp: co_await co::touch(c, f)).
// expect: await_transform
#include "promptly/co/typed.hpp"
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;
namespace co = promptly::co;

co::task<int> handler(pt::future<int, low> f) { co_return co_await f; }
