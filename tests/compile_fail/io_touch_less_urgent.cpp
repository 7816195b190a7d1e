// Rule TOUCH covers I/O futures: code at high may not touch an I/O future
// declared at low (promptly/typed/io.hpp).
// expect: priority inversion
// expect: priority_inversion_error<promptly::typed::touching<low>, promptly::typed::from<high> ?>
#include <span>

#include "promptly/typed.hpp"
#include "promptly/typed/io.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

std::size_t handler(pt::ctx<order, high> c, promptly::io::descriptor& d, std::span<char> buf) {
  auto n = pt::io::read<low>(c, d, buf);
  return c.touch(n);
}
