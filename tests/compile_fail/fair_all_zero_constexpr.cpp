// A constexpr fairness criterion whose weights are all 0 is a compile error
// (at run time it throws std::invalid_argument listing the priorities).
// expect: every_fair_weight_is_zero
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

constexpr pt::fair_criterion<order> crit{pt::weight<high>(0), pt::weight<low>(0)};
