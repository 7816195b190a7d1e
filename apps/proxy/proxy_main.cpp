// proxy_server: the caching web proxy as a program. Prints "LISTENING <port>" on stdout once it
// accepts connections; SIGINT or SIGTERM stop it cleanly (exit 0). README.md has the options.
#include <cstdint>
#include <cstdio>
#include <string>

#include "app_main.hpp"
#include "bench_common.hpp"
#include "priorities.hpp"
#include "server.hpp"

int main(int argc, char** argv) {
  bench::args a(argc, argv);  // --key value; an unknown option exits with status 2
  proxy::server_options opt;
  opt.host = a.get_string("host", opt.host);
  const long port = a.get_long("port", 0);
  if (port < 0 || port > 65535) bench::args::fail("--port must be 0-65535");
  opt.port = static_cast<std::uint16_t>(port);
  const long cache_mib = a.get_long("cache-mib", 16);
  if (cache_mib < 0) bench::args::fail("--cache-mib must not be negative");
  if (static_cast<std::size_t>(cache_mib) > SIZE_MAX >> 20) bench::args::fail("--cache-mib must be at most " + std::to_string(SIZE_MAX >> 20));
  opt.cache_bytes = static_cast<std::size_t>(cache_mib) << 20;
  const long max_connections = a.get_long("max-connections", static_cast<long>(opt.max_connections));
  if (max_connections < 1) bench::args::fail("--max-connections must be at least 1");
  opt.max_connections = static_cast<std::size_t>(max_connections);
  const long idle_timeout_ms = a.get_long("idle-timeout-ms", static_cast<long>(opt.idle_timeout.count()));
  if (idle_timeout_ms < 0) bench::args::fail("--idle-timeout-ms must not be negative (0: no limit)");
  opt.idle_timeout = std::chrono::milliseconds(idle_timeout_ms);
  auto cfg = apps::runtime_options(a, proxy::order::size, "50,30,10,10,0");
  cfg.aps.rho = 1.2;  // the I-Cilk paper ran its proxy with rho 1.2 (little parallelism per level)
  a.finish();
  return apps::serve_until_stopped<proxy::server>("proxy_server", cfg, opt);
}
