// promptly: the command-line client of promptlyd (docs/server.md, "The CLI").
// One subcommand per protocol op, plus watch (a live view from subscribe)
// and load (a load generator). Exit status: 0 ok, 1 the server answered
// with an error (printed as "error CODE: MESSAGE"), 2 usage or connection
// problems.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <promptly/version.hpp>

#include "cli.hpp"
#include "server/daemon/socket.hpp"

namespace promptly::cli {

server::daemon::endpoint make_endpoint(const connection_options& o) {
  server::daemon::endpoint ep;
  ep.unix_path = o.socket.empty() ? server::daemon::default_socket_path() : o.socket;
  ep.tcp = o.tcp;
  if (!o.tcp.empty()) {
    if (o.token_file.empty()) throw std::invalid_argument("--tcp needs --token-file");
    ep.token = server::daemon::read_token_file(o.token_file);
  }
  return ep;
}

json parse_args(const std::vector<std::string>& items) {
  json args = json::object();
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("argument '" + item + "' is not KEY=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    json v = json::parse(value, nullptr, false);
    args[key] = v.is_discarded() ? json(value) : std::move(v);
  }
  return args;
}

int print_reply(const json& reply) {
  if (reply.value("ok", false)) {
    const bool tty = ::isatty(STDOUT_FILENO) != 0;
    std::puts(reply.dump(tty ? 2 : -1, ' ', false, json::error_handler_t::replace).c_str());
    return exit_ok;
  }
  const json& e = reply.contains("error") ? reply["error"] : json::object();
  std::fprintf(stderr, "error %s: %s\n", e.value("code", std::string("?")).c_str(),
               e.value("message", std::string("(no message)")).c_str());
  return exit_server_error;
}

}  // namespace promptly::cli

namespace {

using namespace promptly::cli;

int call_and_print(const connection_options& c, json request) {
  promptly::server::daemon::client cl(make_endpoint(c));
  return print_reply(cl.call(std::move(request)));
}

// A job id of the line protocol (a number); node-prefixed ids belong to the HTTP API.
std::uint64_t numeric_id(const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument("job id '" + text + "' is not a number (ids like n2-17 are the HTTP API's: use --url)");
  return std::stoull(text);
}

// The subcommands the HTTP API serves; the rest need the line protocol.
int over_http(const connection_options& c, const CLI::App& app, const json& submit_body, const std::string& id) {
  if (app.got_subcommand("submit")) return http_call_and_print(c, "POST", "/v1/jobs", submit_body);
  if (app.got_subcommand("status")) return http_call_and_print(c, "GET", "/v1/jobs/" + id);
  if (app.got_subcommand("wait")) return http_call_and_print(c, "GET", "/v1/jobs/" + id + "?wait=1");
  if (app.got_subcommand("cancel")) return http_call_and_print(c, "DELETE", "/v1/jobs/" + id);
  if (app.got_subcommand("jobs")) return http_call_and_print(c, "GET", "/v1/jobs");
  if (app.got_subcommand("stats")) return http_call_and_print(c, "GET", "/v1/stats");
  std::fprintf(stderr, "promptly: %s is not served over --url (the HTTP API has submit, status, wait, cancel, jobs, stats)\n",
               app.get_subcommands().front()->get_name().c_str());
  return exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"promptly: client of the promptlyd job server (docs/server.md)"};
  app.set_version_flag("--version", std::string("promptly ") + PROMPTLY_VERSION + " (protocol 1)");
  app.require_subcommand(1);
  app.fallthrough();  // --socket etc. may also follow the command
  connection_options conn;
  app.add_option("--socket", conn.socket, "promptlyd's Unix socket (default " +
                                              promptly::server::daemon::default_socket_path() + ")");
  app.add_option("--tcp", conn.tcp, "Connect over TCP to HOST:PORT instead (needs --token-file)");
  app.add_option("--token-file", conn.token_file, "File holding the TCP or HTTP token (mode 0600)");
  app.add_option("--url", conn.url,
                 "Use the HTTP API at http://HOST:PORT instead (a daemon's --http or a cluster's HAProxy; "
                 "needs --token-file)");

  // submit
  auto* submit = app.add_subcommand("submit", "Submit a job: PROGRAM key=value... (see `promptly programs`)");
  std::string program;
  std::vector<std::string> kv;
  bool wait = false;
  std::string job_class;
  submit->add_option("program", program, "Registered program name")->required();
  submit->add_option("args", kv, "Program arguments as key=value (values are JSON if they parse, else strings)");
  submit->add_flag("--wait,-w", wait, "Reply when the job is terminal (with result and timing)");
  submit->add_option("--class", job_class, "Priority class (e.g. interactive, batch)");

  // submit-periodic (the server releases an instance every period)
  auto* submit_periodic =
      app.add_subcommand("submit-periodic", "Start a periodic task: PROGRAM key=value... --period-ms MS [--count N]");
  double period_ms = 0;
  std::uint64_t periodic_count = 0;
  submit_periodic->add_option("program", program, "Registered program name")->required();
  submit_periodic->add_option("args", kv, "Program arguments as key=value (as for submit)");
  submit_periodic->add_option("--period-ms", period_ms, "Release period in ms (>= 0.1); an instance's deadline is the next release")
      ->required();
  submit_periodic->add_option("--count", periodic_count, "Instances to release (0 = until cancelled)")->capture_default_str();
  submit_periodic->add_option("--class", job_class, "Priority class of every instance");

  std::string id;
  auto* periodic = app.add_subcommand("periodic", "Print a periodic task: released, done, missed, ...");
  periodic->add_option("id", id, "Periodic task id")->required();
  auto* cancel_periodic = app.add_subcommand("cancel-periodic", "Release no further instance of a periodic task");
  cancel_periodic->add_option("id", id, "Periodic task id")->required();
  auto* wait_cmd = app.add_subcommand("wait", "Wait until a job is terminal and print it");
  wait_cmd->add_option("id", id, "Job id")->required();
  auto* status = app.add_subcommand("status", "Print a job's state (and result once terminal)");
  status->add_option("id", id, "Job id")->required();
  auto* cancel = app.add_subcommand("cancel", "Cancel a job (queued: at once; running: at its next cancellation point)");
  cancel->add_option("id", id, "Job id")->required();
  auto* jobs = app.add_subcommand("jobs", "List live jobs with state and cores");
  auto* stats = app.add_subcommand("stats", "Print the server's totals, flow times and cores per job");
  auto* programs = app.add_subcommand("programs", "List the registered programs with their argument schemas");
  auto* version = app.add_subcommand("version", "Print the server's version and protocol version");
  std::string policy;
  auto* set_policy = app.add_subcommand("set-policy", "Select the core-allocation policy");
  set_policy->add_option("policy", policy, "Policy name: oblivious, prompt, aps, fair, equi, drep, drep-steal-boundary, asteal, elastic")->required();
  unsigned cores = 0;
  auto* set_cores = app.add_subcommand("set-cores", "Occupancy control: use at most N cores (0 = all)");
  set_cores->add_option("cores", cores, "Cores")->required();

  unsigned interval_ms = 500, count = 0;
  auto* watch = app.add_subcommand("watch", "Live view of jobs, cores and flow times (from subscribe); Ctrl-C ends it");
  watch->add_option("--interval", interval_ms, "Refresh interval in ms (>= 10)")->capture_default_str()
      ->check(CLI::Range(10u, 3'600'000u));
  watch->add_option("--count", count, "Stop after this many updates (0 = never)")->capture_default_str();

  load_options lo;
  auto* load = app.add_subcommand("load", "Load generator: open-loop arrivals for a duration; per-job records");
  load->add_option("--workload", lo.workload, "bing | finance (the bing program's distributions) | fixed")
      ->capture_default_str()->check(CLI::IsMember({"bing", "finance", "fixed"}));
  load->add_option("--program", lo.program, "Program for --workload fixed")->capture_default_str();
  load->add_option("--arg", lo.args, "key=value argument of the fixed program (repeatable)");
  load->add_option("--rate", lo.rate, "Arrival rate in jobs/s (Poisson)")->check(CLI::Range(0.0, 1e6));
  load->add_option("--utilization", lo.utilization,
                   "Or: target utilisation of the server's workers (0-1), from the workload's mean work")
      ->check(CLI::Range(0.0, 4.0));
  load->add_option("--duration", lo.duration_s, "Seconds of arrivals")->capture_default_str()
      ->check(CLI::Range(0.01, 86400.0));
  load->add_option("--scale", lo.scale, "Work multiplier of bing/finance jobs")->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  load->add_option("--connections", lo.connections, "Connections to spread the jobs over")->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  load->add_option("--seed", lo.seed, "Seed of arrivals and job draws")->capture_default_str();
  load->add_option("--class", lo.job_class, "Priority class of every job");
  load->add_option("--out", lo.out, "Write per-job records here (.csv or .json)");
  load->add_flag("!--no-progress", lo.progress, "No progress bar");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    (void)app.exit(e);
    return exit_usage;
  }

  try {
    if (!conn.url.empty()) {
      json body{{"program", program}, {"args", parse_args(kv)}, {"wait", wait}};
      if (!job_class.empty()) body["class"] = job_class;
      return over_http(conn, app, body, id);
    }
    if (*submit) {
      json r{{"op", "submit"}, {"program", program}, {"args", parse_args(kv)}, {"wait", wait}};
      if (!job_class.empty()) r["class"] = job_class;
      return call_and_print(conn, r);
    }
    if (*submit_periodic) {
      json r{{"op", "submit_periodic"}, {"program", program}, {"args", parse_args(kv)}, {"period_ms", period_ms},
             {"count", periodic_count}};
      if (!job_class.empty()) r["class"] = job_class;
      return call_and_print(conn, r);
    }
    if (*periodic) return call_and_print(conn, {{"op", "periodic"}, {"id", numeric_id(id)}});
    if (*cancel_periodic) return call_and_print(conn, {{"op", "cancel_periodic"}, {"id", numeric_id(id)}});
    if (*wait_cmd) return call_and_print(conn, {{"op", "wait"}, {"id", numeric_id(id)}});
    if (*status) return call_and_print(conn, {{"op", "status"}, {"id", numeric_id(id)}});
    if (*cancel) return call_and_print(conn, {{"op", "cancel"}, {"id", numeric_id(id)}});
    if (*jobs) return call_and_print(conn, {{"op", "jobs"}});
    if (*stats) return call_and_print(conn, {{"op", "stats"}});
    if (*programs) return call_and_print(conn, {{"op", "programs"}});
    if (*version) return call_and_print(conn, {{"op", "version"}});
    if (*set_policy) return call_and_print(conn, {{"op", "set_policy"}, {"policy", policy}});
    if (*set_cores) return call_and_print(conn, {{"op", "set_cores"}, {"cores", cores}});
    if (*watch) return run_watch(conn, interval_ms, count);
    if (*load) {
      if ((lo.rate > 0) == (lo.utilization > 0)) {
        std::fprintf(stderr, "promptly load: give exactly one of --rate and --utilization\n");
        return exit_usage;
      }
      return run_load(conn, lo);
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "promptly: %s\n", e.what());
    return exit_usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "promptly: %s\n", e.what());
    return exit_usage;
  }
  return exit_usage;
}
