// Suite `jobs`, oneTBB with one OS process per job: the classic way to serve independent jobs
// without a shared scheduler. At each job's release the driver posix_spawn()s the child
// bench_jobs_tbb_job (tbb_job.cpp, found next to this program) with the job's --units, --seed,
// the trace's --piece and --workers; the child runs the job on its own oneTBB runtime of
// --workers threads and prints "start_ns end_ns checksum". The jobs share the cores through the
// OS scheduler only, each child believing it has --workers cores.
//
// One collector thread waits on every open pipe with epoll, reads each child's line, and on EOF
// reaps the child with waitpid (no zombies); a child that exits other than with 0, or prints
// anything but that one line, fails the run with its job index. A job's end is the child's
// end_ns; its start overhead (reported as the flow_excl_start metrics) is the child's start_ns
// minus the time the driver called posix_spawn for it: process creation, exec, dynamic linking
// and static initialisation, but not oneTBB's start, which happens in the child's main.
// Driver and metrics: jobs_common.hpp.
//
// At overload many children are alive at once, each holding one pipe open in the driver: the
// soft RLIMIT_NOFILE is raised to the hard one at start.
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "jobs_common.hpp"

extern char** environ;

namespace {

[[noreturn]] void fail_errno(const std::string& what) { bench::args::fail(what + ": " + std::strerror(errno)); }

// The child program: bench_jobs_tbb_job in this executable's directory.
std::string child_path() {
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= self.size()) fail_errno("readlink /proc/self/exe");
  self.resize(static_cast<std::size_t>(n));
  const std::string path = self.substr(0, self.rfind('/') + 1) + "bench_jobs_tbb_job";
  if (access(path.c_str(), X_OK) != 0) fail_errno("cannot run the child " + path);
  return path;
}

void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) fail_errno("getrlimit");
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) fail_errno("setrlimit RLIMIT_NOFILE");
  }
}

struct child {
  pid_t pid = -1;
  int fd = -1;  // read end of the child's stdout
};

// Starts one job's child, its stdout a pipe; `spawn_ns` is set right before posix_spawn.
// The pipe is close-on-exec, so no other child inherits its write end (the reader sees EOF when
// this child exits), and the dup2 onto the child's stdout clears that flag there.
child spawn_job(const std::string& path, std::uint64_t units, std::uint64_t seed, std::uint64_t piece,
                unsigned workers, std::int64_t& spawn_ns) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    fail_errno("pipe2 (raise the open-file limit, ulimit -Hn, for this many jobs alive at once)");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  std::vector<std::string> words = {path,    "--units", std::to_string(units), "--seed",   std::to_string(seed),
                                    "--piece", std::to_string(piece), "--workers", std::to_string(workers)};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  child c;
  spawn_ns = jobs::now_ns();
  const int err = posix_spawn(&c.pid, path.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (err != 0) {
    errno = err;
    fail_errno("posix_spawn " + path);
  }
  c.fd = p[0];
  return c;
}

struct child_result {
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint64_t checksum = 0;
};

// After the child's EOF: closes its pipe, reaps it and parses its one line. Returns an error
// message, empty when the child exited 0 and printed "start_ns end_ns checksum\n".
std::string finish_child(const child& c, const std::string& out, child_result& r) {
  close(c.fd);
  int status = 0;
  while (waitpid(c.pid, &status, 0) < 0)
    if (errno != EINTR) return std::string("waitpid: ") + std::strerror(errno);
  if (WIFSIGNALED(status)) return "child killed by signal " + std::to_string(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "child exited with status " + std::to_string(WEXITSTATUS(status));
  long long start = 0, end = 0;
  unsigned long long sum = 0;
  int used = -1;
  if (std::sscanf(out.c_str(), "%lld %lld %llu%n", &start, &end, &sum, &used) != 3 ||
      out.compare(static_cast<std::size_t>(used), std::string::npos, "\n") != 0 || out[0] == '-' || start <= 0 ||
      end < start)
    return "child printed '" + out + "', not 'start_ns end_ns checksum'";
  r.start_ns = start;
  r.end_ns = end;
  r.checksum = sum;
  return {};
}

// Reads one child to EOF on the calling thread (the warm-up).
std::string run_sync(const child& c, child_result& r) {
  std::string out;
  char buf[256];
  for (;;) {
    const ssize_t n = read(c.fd, buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  return finish_child(c, out, r);
}

// One replay's children. Main writes a job's fd (and spawn_ns, read only after the collector is
// joined), publishes the pid, then registers the fd with epoll; the collector reads a job's
// slots only after epoll reported its fd.
struct replay_state {
  std::vector<int> fd;
  std::vector<std::atomic<pid_t>> pid;
  std::vector<std::int64_t> spawn_ns;
  std::vector<child_result> result;  // the collector's, read by main after the join
  std::string error;                 // the first failure, likewise
  int epfd = -1;
  explicit replay_state(std::size_t n) : fd(n, -1), pid(n), spawn_ns(n), result(n) {
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) fail_errno("epoll_create1");
  }
  ~replay_state() { close(epfd); }

  // The collector thread: until all `count` children ended. Keeps reaping after a failure so that
  // none is left a zombie; main reports the first one.
  void collect(std::size_t count) {
    std::vector<std::string> out(count);
    std::size_t ended = 0;
    epoll_event ev[64];
    while (ended < count) {
      const int k = epoll_wait(epfd, ev, 64, -1);
      if (k < 0) {
        if (errno == EINTR) continue;
        error = std::string("epoll_wait: ") + std::strerror(errno);
        return;
      }
      for (int e = 0; e < k; ++e) {
        const auto i = static_cast<std::size_t>(ev[e].data.u64);
        // acquire: pairs with main's release, so fd[i] is the one main wrote.
        const child c{pid[i].load(std::memory_order_acquire), fd[i]};
        char buf[256];
        const ssize_t n = read(c.fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
          if (out[i].size() < 4096) out[i].append(buf, static_cast<std::size_t>(n));  // a line is < 64 bytes
          continue;
        }
        epoll_ctl(epfd, EPOLL_CTL_DEL, c.fd, nullptr);
        const std::string err = finish_child(c, out[i], result[i]);
        if (!err.empty() && error.empty()) error = "job " + std::to_string(i) + ": " + err;
        ++ended;
      }
    }
  }

  // Main: job i's child has started; hand it to the collector.
  void add(std::size_t i, const child& c) {
    fd[i] = c.fd;
    pid[i].store(c.pid, std::memory_order_release);  // release: fd[i] before the collector reads it
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c.fd, &ev) != 0) fail_errno("epoll_ctl");
  }
};

}  // namespace

int main(int argc, char** argv) {
  return jobs::main(
      argc, argv, [](bench::args&) {},
      [](unsigned workers) -> jobs::run_trace_fn {
        raise_fd_limit();
        const std::string path = child_path();
        // Warm-up: the child's executable and libraries are in the page cache before the first
        // replay; each one's sum is checked against the serial one.
        for (std::uint64_t k = 0; k < 5; ++k) {
          std::int64_t spawn_ns = 0;
          child_result r;
          const std::string err = run_sync(spawn_job(path, 200, k, 10, workers, spawn_ns), r);
          if (!err.empty()) bench::args::fail("warm-up job: " + err);
          if (r.checksum != jobs::bing_piece(0, 200, k)) bench::args::fail("warm-up job computed a wrong sum");
        }
        return [path, workers](const jobs::plan& p, std::int64_t& t0) {
          const std::uint64_t piece = p.tr->piece_units;
          replay_state st(p.count);
          std::thread collector([&] { st.collect(p.count); });
          t0 = jobs::replay(p, [&](std::size_t i) {
            const jobs::job& j = p.tr->jobs[i];
            st.add(i, spawn_job(path, j.units, j.seed, piece, workers, st.spawn_ns[i]));
          });
          collector.join();
          if (!st.error.empty()) bench::args::fail(st.error);
          jobs::outcome o;
          o.end_ns.resize(p.count);
          o.start_overhead_ns.resize(p.count);
          for (std::size_t i = 0; i < p.count; ++i) {
            o.end_ns[i] = st.result[i].end_ns;
            o.start_overhead_ns[i] = st.result[i].start_ns - st.spawn_ns[i];
            if (o.start_overhead_ns[i] < 0) bench::args::fail("job " + std::to_string(i) + " started before its spawn");
            o.checksum += st.result[i].checksum;
          }
          return o;
        };
      });
}
