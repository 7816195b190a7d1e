// email_server: the email server as a program. Prints "LISTENING <port>" on stdout once it
// accepts connections; SIGINT or SIGTERM stop it cleanly (every acknowledged request is
// answered first) and it exits 0. See README.md for the protocol and the options; a bad option
// exits with status 2 and a message naming it (bench_common.hpp's parser).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app_main.hpp"
#include "bench_common.hpp"
#include "priorities.hpp"
#include "server.hpp"

namespace {

long non_negative(bench::args& a, const std::string& key, long def) {
  long v = a.get_long(key, def);
  if (v < 0) bench::args::fail("--" + key + " must not be negative");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);  // --key value; an unknown option exits with status 2
  email::server_options opt;
  opt.host = a.get_string("host", opt.host);
  const long port = non_negative(a, "port", 0);
  if (port > 65535) bench::args::fail("--port must be at most 65535");
  opt.port = static_cast<std::uint16_t>(port);
  opt.capacity = static_cast<std::size_t>(non_negative(a, "capacity", static_cast<long>(opt.capacity)));
  const auto mailbox_kib = static_cast<std::size_t>(non_negative(a, "mailbox-kib", static_cast<long>(opt.mailbox_bytes >> 10)));
  if (mailbox_kib > SIZE_MAX >> 10) bench::args::fail("--mailbox-kib must be at most " + std::to_string(SIZE_MAX >> 10));
  opt.mailbox_bytes = mailbox_kib << 10;
  opt.seed_messages = static_cast<std::size_t>(non_negative(a, "seed-messages", static_cast<long>(opt.seed_messages)));
  opt.period = std::chrono::milliseconds(non_negative(a, "period-ms", 250));
  opt.chunk = static_cast<std::size_t>(non_negative(a, "chunk", 10));
  opt.max_in_flight_per_connection = static_cast<std::size_t>(
      non_negative(a, "max-in-flight-per-connection", static_cast<long>(opt.max_in_flight_per_connection)));
  opt.max_in_flight = static_cast<std::size_t>(non_negative(a, "max-in-flight", static_cast<long>(opt.max_in_flight)));
  opt.max_connections = static_cast<std::size_t>(non_negative(a, "max-connections", static_cast<long>(opt.max_connections)));
  opt.max_mailboxes = static_cast<std::size_t>(non_negative(a, "max-mailboxes", static_cast<long>(opt.max_mailboxes)));
  opt.idle_timeout = std::chrono::milliseconds(non_negative(a, "idle-timeout-ms", static_cast<long>(opt.idle_timeout.count())));

  // fair: a criterion that favours the interactive levels (client loop, send) by default.
  const auto cfg = apps::runtime_options(a, email::order::size, "40,25,15,10,5,5");
  a.finish();
  return apps::serve_until_stopped<email::server>("email_server", cfg, opt);
}
