// A fairness criterion names at least one priority.
// expect: name at least one priority
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

const pt::fair_criterion<order> crit{};
