// promptly watch: a live terminal view of the server from its subscription
// stream (AMCilk Sec. 4.1: what an external scheduler sees): totals, queue
// length, cores in use, flow times over the window, and per running job
// its cores and work vs. steal/idle time.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli.hpp"

namespace promptly::cli {

namespace {

void render(const json& s, bool tty) {
  if (tty) std::fputs("\x1b[H\x1b[2J", stdout);  // home + clear
  auto u = [&](const char* k) { return s.value(k, json(0)).dump(); };
  std::printf("promptlyd  #%s  cores in use %s (limit %s)  running %s  queued %s%s\n", u("seq").c_str(),
              u("cores_in_use").c_str(), u("core_limit").c_str(), u("running").c_str(), u("queued").c_str(),
              s.value("draining", false) ? "  DRAINING" : "");
  std::printf("submitted %s  done %s  failed %s  cancelled %s  rejected %s\n", u("submitted").c_str(),
              u("done").c_str(), u("failed").c_str(), u("cancelled").c_str(), u("rejected").c_str());
  // Flow times are {"flow":{"mean_us","p50_us","p99_us"}} in stats and per program.
  auto ms = [&](const json& o, const char* k) {
    return o.contains("flow") && o["flow"].is_object() ? o["flow"].value(k, 0.0) / 1000.0 : 0.0;
  };
  std::printf("flow time (window): mean %.2f ms  p50 %.2f ms  p99 %.2f ms\n", ms(s, "mean_us"),
              ms(s, "p50_us"), ms(s, "p99_us"));
  if (s.contains("programs") && s["programs"].is_array() && !s["programs"].empty()) {
    std::printf("\n%-12s %8s %8s %9s %10s %10s %10s\n", "program", "done", "failed", "cancelled", "mean ms", "p50 ms",
                "p99 ms");
    for (const auto& p : s["programs"])
      std::printf("%-12s %8s %8s %9s %10.2f %10.2f %10.2f\n", p.value("program", std::string()).c_str(),
                  p.value("done", json(0)).dump().c_str(), p.value("failed", json(0)).dump().c_str(),
                  p.value("cancelled", json(0)).dump().c_str(), ms(p, "mean_us"), ms(p, "p50_us"),
                  ms(p, "p99_us"));
  }
  if (s.contains("jobs") && s["jobs"].is_array()) {
    std::printf("\n%-8s %-12s %-9s %6s %9s %9s\n", "job", "program", "state", "cores", "work s", "look s");
    for (const auto& j : s["jobs"])
      std::printf("%-8s %-12s %-9s %6s %9.3f %9.3f\n", j.value("id", json(0)).dump().c_str(),
                  j.value("program", std::string()).c_str(), j.value("state", std::string()).c_str(),
                  j.value("cores", json(0)).dump().c_str(), j.value("work_s", 0.0), j.value("look_s", 0.0));
  }
  std::fflush(stdout);
}

}  // namespace

int run_watch(const connection_options& c, unsigned interval_ms, unsigned count) {
  server::daemon::client cl(make_endpoint(c));
  const json reply = cl.call({{"op", "subscribe"}, {"interval_ms", interval_ms}});
  if (!reply.value("ok", false)) return print_reply(reply);
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  for (unsigned n = 0; count == 0 || n < count; ++n) {
    const auto line = cl.receive_line();
    if (!line) {
      std::fprintf(stderr, "promptly watch: the server closed the connection\n");
      return exit_ok;
    }
    const json s = json::parse(*line, nullptr, false);
    if (s.is_discarded() || !s.contains("stream")) continue;
    render(s, tty);
  }
  return exit_ok;
}

}  // namespace promptly::cli
