// A negative weight in a constexpr fairness criterion is a compile error
// (at run time it throws std::invalid_argument naming the priority).
// expect: fair_weight_is_negative
#include "promptly/typed.hpp"

struct high {};
struct low {};
using order = promptly::priority_order<promptly::before<high, low>>;
namespace pt = promptly::typed;

constexpr pt::fair_criterion<order> crit{pt::weight<high>(3), pt::weight<low>(-1)};
