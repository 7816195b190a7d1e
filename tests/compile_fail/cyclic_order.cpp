// A cyclic declaration cannot be linearised; the error lists the cycle,
// starting from the priority declared first.
// expect: the declared relations form a cycle
// expect: priority_cycle_error<ui, fetch, batch ?>
#include "promptly/typed.hpp"

struct ui {};
struct fetch {};
struct batch {};
struct idle {};
using order = promptly::priority_order<promptly::before<idle, ui>, promptly::before<ui, fetch>,
                                       promptly::before<fetch, batch>, promptly::before<batch, ui>>;

unsigned level_of_ui() { return order::level_of<ui>; }
