// What the kernel says about a thread of this process (/proc/self/task/<tid>), for tests that
// synchronise on a thread being blocked rather than on time.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>

// The calling thread's kernel id.
inline pid_t current_thread_id() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Whether thread `tid` of this process is blocked in the kernel (state S or
// D in /proc), e.g. in a futex wait.
inline bool thread_blocked(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');  // the command name may contain spaces
  return close != std::string::npos && close + 2 < line.size() && (line[close + 2] == 'S' || line[close + 2] == 'D');
}

// How many times thread `tid` gave up its CPU to wait (voluntary_ctxt_switches), or -1 if it
// cannot be read. A thread that spins, however long, adds none.
inline long voluntary_switches(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  const std::string key = "voluntary_ctxt_switches:";
  for (std::string line; std::getline(status, line);)
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  return -1;
}
