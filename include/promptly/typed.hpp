// Typed priorities (docs/typed-priorities.md): priorities as C++ types with
// a declared order, futures typed by their priority, rule TOUCH checked at
// compile time ("Responsive Parallelism with Futures and State", PLDI 2020),
// typed future cells, the dynamic API that checks the same rule at run
// time ("Fairness in Responsive Parallelism", ICFP 2019, Sec. 5.3), and
// fairness criteria by priority for the `fair` policy (the same paper, Sec. 4).
//
// Not included by promptly/promptly.hpp: include this header to use it.
#pragma once

#include "promptly/future_cell.hpp"
#include "promptly/typed/combinators.hpp"
#include "promptly/typed/context.hpp"
#include "promptly/typed/dynamic_order.hpp"
#include "promptly/typed/fair_criterion.hpp"
#include "promptly/typed/fcreate.hpp"
#include "promptly/typed/future.hpp"
#include "promptly/typed/future_cell.hpp"
#include "promptly/typed/priority_order.hpp"
