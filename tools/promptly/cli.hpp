// Shared pieces of the `promptly` CLI: how to reach the daemon, how to
// print replies, exit codes (0 ok, 1 server error, 2 usage).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/daemon/client.hpp"

namespace promptly::cli {

using nlohmann::json;

inline constexpr int exit_ok = 0;
inline constexpr int exit_server_error = 1;
inline constexpr int exit_usage = 2;

struct connection_options {
  std::string socket;
  std::string tcp;
  std::string token_file;
  std::string url;  // the HTTP API instead (http://HOST:PORT), with the token file's bearer token
};

// One request to the HTTP API (conn.url); prints the reply as print_reply does and returns its exit code.
int http_call_and_print(const connection_options& conn, const std::string& method, const std::string& path,
                        const json& body = nullptr);

// Connects as the options say (reads the token file for TCP).
[[nodiscard]] server::daemon::endpoint make_endpoint(const connection_options& o);

// key=value -> args object; a value that parses as JSON (numbers, true,
// false, null, quoted strings, objects) is that JSON, anything else a
// string. Throws std::invalid_argument for an item without '='.
[[nodiscard]] json parse_args(const std::vector<std::string>& items);

// Prints a reply (indented on a terminal, one line otherwise); returns the
// exit code: 0 for ok, 1 (after printing "error CODE: MESSAGE" on stderr)
// for an error reply.
int print_reply(const json& reply);

struct load_options {
  std::string workload = "bing";  // bing | finance | fixed
  std::string program = "fib";    // for fixed
  std::vector<std::string> args;  // for fixed: key=value
  double rate = 0;                // jobs per second (open loop, Poisson arrivals)
  double utilization = 0;         // or: target utilisation of the server's workers, 0..1
  double duration_s = 10;
  double scale = 1;               // bing/finance work multiplier
  unsigned connections = 4;
  std::uint64_t seed = 1;
  std::string job_class;
  std::string out;                // .csv or .json per-job records
  bool progress = true;
};
int run_load(const connection_options& c, const load_options& o);

int run_watch(const connection_options& c, unsigned interval_ms, unsigned count);

// Mean work (ms) of the built-in bing program's distributions (mirrors
// src/server/programs/bing.cpp).
[[nodiscard]] double mean_work_ms(const std::string& workload);

}  // namespace promptly::cli
