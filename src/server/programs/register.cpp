// register_builtin_programs: the built-in programs of promptlyd.
#include "promptly/server/builtin_programs.hpp"

#include "programs.hpp"

namespace promptly::server {

void register_builtin_programs(job_server& srv) {
  programs::register_fib(srv);
  programs::register_nqueens(srv);
  programs::register_matmul(srv);
  programs::register_cilksort(srv);
  programs::register_bing(srv);
  programs::register_stream(srv);
}

}  // namespace promptly::server
