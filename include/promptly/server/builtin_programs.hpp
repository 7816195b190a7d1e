// The built-in programs of promptlyd, for any job_server (docs/server-embedded.md,
// "Built-in programs"). Each is a fork-join program that runs in its job's
// pool, polls job_context::cancelled() at its cutoffs, bounds every size
// argument in its schema (so a client cannot make the server allocate
// without bound), and returns a JSON result a client can check:
//
//   fib       n, cutoff           -> the Fibonacci number (a JSON integer)
//   nqueens   n                   -> {"n", "solutions"}
//   matmul    n (power of two)    -> {"n", "checksum", "expected", "verified"}
//   cilksort  n, seed             -> {"n", "sorted", "checksum", "checksum_before"}
//   bing      workload, seed, work_ms, scale
//                                 -> {"workload", "work_ms", "units", "checksum"}
//                                    (the Bing-like / finance-like synthetic jobs of AMCilk Sec. 5.1 and 6.1)
//   stream    mib, reps           -> {"mib", "elements", "reps", "sum", "expected", "verified", "gb_per_s"}
#pragma once

#include "promptly/server/job_server.hpp"

namespace promptly::server {

// Registers the six programs above; throws std::invalid_argument if one of
// their names is already registered.
void register_builtin_programs(job_server& srv);

}  // namespace promptly::server
