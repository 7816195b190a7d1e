// The proxy's priorities, most urgent first (the proxy of "Responsive Parallelism with Futures
// and State", PLDI 2020, Sec. 5.1, and of the I-Cilk paper, SPAA 2020, Sec. 5.2):
//
//   client_loop  the accept loop and the per-client loops, which answer cache hits at once
//   fetch        a cache miss: fetch the page from the origin, cache it, answer the client
//   resize       keep the cache within its capacity (evict oldest pages)
//   stats        log statistics about the cache
//   admin        start-up and shutdown
//
// A client loop cannot wait for a fetch (less urgent). So on a miss it hands the connection to
// the fetch task and ends; the fetch answers, then starts a new client loop for the connection
// (creating a more urgent task is always allowed). Responses stay in request order without the
// loop ever waiting on less urgent work.
#pragma once

#include <promptly/typed.hpp>

namespace proxy {

struct client_loop {};
struct fetch {};
struct resize {};
struct stats {};
struct admin {};

using order = promptly::priority_order<promptly::chain<client_loop, fetch, resize, stats, admin>>;

template <class P>
using ctx = promptly::typed::ctx<order, P>;

}  // namespace proxy
