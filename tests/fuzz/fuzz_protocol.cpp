// libFuzzer target of promptlyd's request parser and dispatcher
// (src/server/protocol/): arbitrary bytes are fed to a protocol session
// (framing, JSON parsing, field checks, every op) against a job_server with
// the built-in programs and small admission limits. After each input every
// live job is cancelled and awaited and every periodic task cancelled, so
// inputs do not pile up work.
// Built and run by tests/fuzz/run.sh (clang++-14, -fsanitize=fuzzer,address).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <promptly/promptly.hpp>
#include <promptly/server/builtin_programs.hpp>
#include <promptly/server/job_server.hpp>

#include "server/protocol/protocol.hpp"

namespace {

struct fixture {
  promptly::runtime rt{[] {
    promptly::runtime_config c;
    c.workers = 2;
    return c;
  }()};
  promptly::server::job_server srv{rt, [] {
                                     promptly::server::job_server_options o;
                                     o.max_running = 2;
                                     o.max_queued = 4;
                                     o.result_ttl = std::chrono::seconds(1);  // bounded memory over a long run
                                     return o;
                                   }()};
  promptly::server::protocol::service svc{srv};
  fixture() { promptly::server::register_builtin_programs(srv); }
};

fixture& the_fixture() {
  static fixture* f = new fixture;  // lives for the whole run (never destroyed: no teardown races at exit)
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fixture& f = the_fixture();
  auto& srv = f.srv;
  srv.set_cores(0);  // undo a set_cores of an earlier input
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  promptly::server::protocol::session_options so;
  // Half the inputs (by their length) run on a connection that needs a token.
  if (size % 2 == 1) so.token = "fuzz-token-0123456789";
  auto s = promptly::server::protocol::session::create(f.svc, so, [] {});
  // Feed in two pieces split at a point the input chooses, to exercise
  // lines that straddle reads.
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  s->feed(bytes.substr(0, cut));
  s->feed(bytes.substr(cut));
  if (auto t = s->next_stream_at()) s->stream_tick(*t);
  s->end_input();
  (void)s->take_output();
  for (const auto& p : srv.stats().periodic) (void)srv.cancel_periodic(p.id);  // no releases pile up either
  for (const auto& j : srv.jobs()) srv.cancel(j.id);
  for (const auto& j : srv.jobs()) (void)srv.wait(j.id);
  (void)s->take_output();
  return 0;
}
