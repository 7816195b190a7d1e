// A fairness criterion may weigh only priorities of its order
// (promptly/typed/fair_criterion.hpp): the diagnostic names the stranger.
// expect: priority_not_in_order_error<stranger,
#include "promptly/typed.hpp"

struct high {};
struct low {};
struct stranger {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

const pt::fair_criterion<order> crit{pt::weight<high>(3), pt::weight<stranger>(1)};
