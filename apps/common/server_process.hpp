// Starting and stopping an app's server as a child process, for the drivers: the server prints
// "LISTENING <port>" as its first line on stdout; SIGTERM must stop it cleanly (exit 0).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace apps {

// cmake:TARGET -> the directory of the calling program (bench-bin), go:PKG -> <build>/go/PKG
// (where the benchmark harness puts Go programs), anything else is a path.
std::string resolve_server(const std::string& spec);

struct child {
  pid_t pid = -1;
  std::uint16_t port = 0;
};

// Starts `path` with `args` and reads its LISTENING line; exits 2 with a message if it does not
// print one.
child start_server(const std::string& path, const std::vector<std::string>& args);

// SIGTERM, then waits up to 20 s for a clean exit; returns the problem, or "" if it exited 0.
std::string stop_server(pid_t pid);

// A number from a flat JSON object line (the servers' statistics), or -1 if the key is missing.
double json_number(const std::string& json, const std::string& key);

}  // namespace apps
