#include "server_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "bench_common.hpp"

namespace fs = std::filesystem;

namespace apps {

std::string resolve_server(const std::string& spec) {
  fs::path self = fs::canonical("/proc/self/exe");
  if (spec.rfind("cmake:", 0) == 0) return (self.parent_path() / spec.substr(6)).string();
  if (spec.rfind("go:", 0) == 0) return (self.parent_path().parent_path() / "go" / spec.substr(3)).string();
  return spec;
}

child start_server(const std::string& path, const std::vector<std::string>& args) {
  int out[2];
  if (::pipe(out) != 0) bench::args::fail("pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) bench::args::fail("fork failed");
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<char*> argv{const_cast<char*>(path.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(path.c_str(), argv.data());
    std::fprintf(stderr, "email_driver: cannot run %s\n", path.c_str());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string line;
  char ch;
  while (::read(out[0], &ch, 1) == 1 && ch != '\n') line += ch;
  ::close(out[0]);
  unsigned port = 0;
  if (std::sscanf(line.c_str(), "LISTENING %u", &port) != 1 || port == 0 || port > 65535) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    bench::args::fail("server " + path + " did not print 'LISTENING <port>' (got '" + line + "')");
  }
  return {pid, static_cast<std::uint16_t>(port)};
}

std::string stop_server(pid_t pid) {
  ::kill(pid, SIGTERM);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > give_up) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return "the server did not stop within 20 s of SIGTERM";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return WIFEXITED(status) ? "the server exited with status " + std::to_string(WEXITSTATUS(status))
                           : "the server was killed by signal " + std::to_string(WTERMSIG(status));
}

double json_number(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

}  // namespace apps
