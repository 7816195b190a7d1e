// A fairness criterion gives each priority at most one weight: naming one
// twice is ambiguous, and the diagnostic names it.
// expect: priority_weighted_twice_error<low>
// expect: is given a weight twice
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

const pt::fair_criterion<order> crit{pt::weight<low>(1), pt::weight<high>(3), pt::weight<low>(2)};
