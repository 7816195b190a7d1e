// The email server's priorities, most urgent first (the email client of "Priority Scheduling
// for Interactive Applications", SPAA 2020, Sec. 5.2, and of "Responsive Parallelism with
// Futures and State", PLDI 2020, Sec. 5.1):
//
//   client_loop  the per-connection loop that reads requests and acknowledges them
//   sending      delivering a message into the recipient's mailbox
//   sorting      sorting a mailbox
//   archiving    print (uncompress and hand out) and compress: one priority, because the two
//                wait for each other's futures through a per-message cell (rule TOUCH allows
//                touching only futures at least as urgent as the toucher, so they must be equal)
//   checking     the per-mailbox periodic check that starts compressions
//   admin        start-up and shutdown
//
// Every task body takes the context of its priority, so a touch of a less urgent future (the
// client loop waiting for a print, say) does not compile.
#pragma once

#include <promptly/typed.hpp>

namespace email {

struct client_loop {};
struct sending {};
struct sorting {};
struct archiving {};
struct checking {};
struct admin {};

using order = promptly::priority_order<promptly::chain<client_loop, sending, sorting, archiving, checking, admin>>;

template <class P>
using ctx = promptly::typed::ctx<order, P>;

}  // namespace email
