// The job server's priorities, most urgent first (the job server of "Priority Scheduling for
// Interactive Applications", SPAA 2020, Sec. 5.2): the arrival generators, then the four job
// types by smallest work first (matrix multiplication, fib, cilksort, Smith-Waterman), then
// the admin task that starts the generators and waits for every job at the end.
#pragma once

#include <promptly/typed.hpp>

namespace jserver {

// In their own namespace: the kernels (kernels.hpp) are named fib and so on too.
namespace prio {
struct generator {};
struct mm {};
struct fib {};
struct sort {};
struct sw {};
struct admin {};
}  // namespace prio

using order = promptly::priority_order<
    promptly::chain<prio::generator, prio::mm, prio::fib, prio::sort, prio::sw, prio::admin>>;

template <class P>
using ctx = promptly::typed::ctx<order, P>;

}  // namespace jserver
