// Rule TOUCH covers coroutines: a coroutine at high may not co_await a future
// declared at low (promptly/co/typed.hpp). A plain co_await of a typed future
// does not compile at all.
// expect: priority inversion
// expect: priority_inversion_error<promptly::typed::touching<low>, promptly::typed::from<high> ?>
#include <span>

#include "promptly/co/typed.hpp"
#include "promptly/typed.hpp"
#include "promptly/typed/io.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;
namespace co = promptly::co;

co::task<std::size_t> handler(pt::ctx<order, high> c, promptly::io::descriptor& d, std::span<char> buf) {
  auto n = pt::io::read<low>(c, d, buf);
  co_return co_await co::touch(c, n);
}
