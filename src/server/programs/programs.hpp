// One registration function per built-in program (one file each);
// register_builtin_programs (register.cpp) calls them all.
#pragma once

#include "promptly/server/job_server.hpp"

namespace promptly::server::programs {

void register_fib(job_server& srv);
void register_nqueens(job_server& srv);
void register_matmul(job_server& srv);
void register_cilksort(job_server& srv);
void register_bing(job_server& srv);
void register_stream(job_server& srv);

}  // namespace promptly::server::programs
