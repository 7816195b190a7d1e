// promptlyd as a child process for the end-to-end tests (server_daemon_test,
// server_daemon_robustness_test): a private temporary directory for its
// socket, the process with its start-up lines up to "ready", raw HTTP GETs of
// its metrics endpoint. The including target defines PROMPTLYD_PATH.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/daemon/client.hpp"
#include "server/daemon/socket.hpp"

struct temp_dir {
  std::string path;
  temp_dir() {
    char tmpl[] = "/tmp/promptlyd-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

// The daemon as a child process; its stdout lines up to "ready" are kept.
class daemon_process {
 public:
  // stderr_path: where the child's stderr goes ("" = the test's stderr).
  explicit daemon_process(std::vector<std::string> args, const std::string& stderr_path = "") {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
      ::dup2(out[1], STDOUT_FILENO);
      if (!stderr_path.empty()) {
        const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (err >= 0) ::dup2(err, STDERR_FILENO);
      }
      std::vector<char*> argv;
      static std::string exe = PROMPTLYD_PATH;
      argv.push_back(exe.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    out_ = ::fdopen(out[0], "r");
    char line[4096];
    while (std::fgets(line, sizeof line, out_) != nullptr) {
      std::string l(line);
      if (!l.empty() && l.back() == '\n') l.pop_back();
      lines_.push_back(l);
      if (l == "ready") return;
    }
    exit_status_ = wait_exit();  // it stopped before "ready"
  }
  ~daemon_process() {
    if (pid_ > 0 && !exit_status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_) std::fclose(out_);
  }
  [[nodiscard]] bool ready() const { return !exit_status_.has_value(); }
  // The value after "<prefix> " in a start-up line, e.g. "listening tcp".
  [[nodiscard]] std::string line_value(const std::string& prefix) const {
    for (const auto& l : lines_)
      if (l.rfind(prefix + " ", 0) == 0) return l.substr(prefix.size() + 1);
    return "";
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  [[nodiscard]] pid_t pid() const { return pid_; }
  // The exit status (or 128 + signal), waiting for it.
  int wait_exit() {
    if (exit_status_) return *exit_status_;
    int st = 0;
    ::waitpid(pid_, &st, 0);
    exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return *exit_status_;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  std::vector<std::string> lines_;
  std::optional<int> exit_status_;
};

inline std::string code_of(const nlohmann::json& r) { return r.at("error").at("code").get<std::string>(); }


// A raw HTTP GET (status line and body) on loopback.
inline std::pair<int, std::string> http_get(const std::string& host_port, const std::string& path) {
  const auto hp = promptly::server::daemon::parse_host_port(host_port);
  promptly::server::daemon::client c(promptly::server::daemon::connect_tcp(hp.host, hp.port));
  c.send_raw("GET " + path + " HTTP/1.1\r\nHost: " + host_port + "\r\nConnection: close\r\n\r\n");
  std::string all;
  while (auto l = c.receive_line()) all += *l + "\n";
  const int status = std::stoi(all.substr(9, 3));
  const auto body = all.find("\r\n\r\n");
  return {status, body == std::string::npos ? "" : all.substr(body + 4)};
}

// The value of an unlabelled sample in a Prometheus text exposition, or -1.
inline double metric(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

