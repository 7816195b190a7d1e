// The job server's overhead benchmark (bench/suites/server.py; AMCilk
// Sec. 5.1 measures starting a job, removing it, and the server's
// throughput). Starts bin/promptlyd (next to this program's bench-bin/) as a
// child on a Unix socket in a private temporary directory and drives it over
// protocol version 1:
//
// --max-running bounds the running jobs (promptlyd's option; default 64).
//
//   --what throughput  n trivial jobs (fib 0) pipelined with "wait":true over
//                      4 connections; jobs/s from first send to last reply;
//                      none may be lost or rejected (the answer is n done)
//   --what start       n trivial jobs one at a time: the server's start
//                      overhead (start decision -> root task running) and
//                      pool removal per job from the replies' timing, and the
//                      client's round trip
//   --what memory      one long job holds the only running slot, n trivial
//                      jobs queue behind it: promptlyd's RSS growth per queued job
//   --what overload    bing jobs arrive at 10x the workers' capacity for
//                      --seconds while another connection asks `stats` every
//                      10 ms: the stats round trip, and how much was rejected
//
// Prints the bench protocol's RESULT line (bench/README.md).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "server/daemon/client.hpp"

using nlohmann::json;
using promptly::server::daemon::client;
using promptly::server::daemon::endpoint;
using clock_type = std::chrono::steady_clock;

namespace {

std::string self_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().string();
}

class daemon_child {
 public:
  daemon_child(unsigned workers, std::vector<std::string> extra) {
    char tmpl[] = "/tmp/promptlyd-bench-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    sock_ = dir_ + "/promptlyd.sock";
    std::vector<std::string> args{self_dir() + "/" + PROMPTLYD_RELATIVE_PATH, "--socket", sock_, "--workers",
                                  std::to_string(workers)};
    args.insert(args.end(), extra.begin(), extra.end());
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) bench::args::fail("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::dup2(out[1], STDOUT_FILENO);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    FILE* f = ::fdopen(out[0], "r");
    char line[4096];
    bool ready = false;
    while (!ready && std::fgets(line, sizeof line, f) != nullptr) ready = std::string(line) == "ready\n";
    std::fclose(f);
    if (!ready) bench::args::fail("promptlyd (" + args[0] + ") did not start");
  }
  ~daemon_child() {
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    std::filesystem::remove_all(dir_);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) std::fprintf(stderr, "promptlyd did not exit 0 after SIGTERM\n");
  }
  [[nodiscard]] endpoint ep() const { return endpoint{sock_, "", ""}; }
  [[nodiscard]] double rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string key;
    while (in >> key) {
      if (key == "VmRSS:") {
        double v;
        in >> v;
        return v;
      }
      std::getline(in, key);
    }
    return 0;
  }

 private:
  std::string dir_, sock_;
  pid_t pid_ = -1;
};

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

json trivial(bool wait) { return {{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 0}}}, {"wait", wait}}; }

// n jobs over 4 pipelined connections; returns the number done.
long throughput_round(const daemon_child& d, long n) {
  const int conns = 4;
  std::atomic<long> done{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < conns; ++c) {
    threads.emplace_back([&, c] {
      client cl(d.ep());
      const long mine = n / conns + (c < n % conns ? 1 : 0);
      std::thread sender([&] {
        const std::string line = trivial(true).dump() + "\n";
        std::string batch;
        for (long i = 0; i < mine; ++i) {
          batch += line;
          if (batch.size() > 32 * 1024) {
            cl.send_raw(batch);
            batch.clear();
          }
        }
        cl.send_raw(batch);
      });
      long ok = 0;
      for (long i = 0; i < mine; ++i)
        if (cl.receive().value("state", "") == "done") ++ok;
      sender.join();
      done.fetch_add(ok, std::memory_order_relaxed);  // read after join
    });
  }
  for (auto& t : threads) t.join();
  return done.load(std::memory_order_relaxed);
}

}  // namespace

int main(int argc, char** argv) {
  bench::args a(argc, argv);
  const auto workers = static_cast<unsigned>(a.get_long("workers", 2));
  const long warmup = a.get_long("warmup", 0), reps = a.get_long("reps", 1);
  const std::string what = a.get_string("what", "throughput");
  const long n = a.get_long("n", 100000);
  const long seconds = a.get_long("seconds", 3);
  const long max_running = a.get_long("max-running", 64);
  a.finish();
  std::vector<std::pair<std::string, double>> extra;

  if (what == "throughput") {
    daemon_child d(workers, {"--max-queued", std::to_string(n + 16), "--max-running", std::to_string(max_running)});
    auto [answer, s] = bench::measure(warmup, reps, [&] { return throughput_round(d, n); });
    client cl(d.ep());
    const json st = cl.call({{"op", "stats"}});
    extra = {{"jobs_per_s", static_cast<double>(n) / s.region_s},
             {"jobs_per_s_best", static_cast<double>(n) / s.region_s_min},
             {"rejected", st.value("rejected", 0.0)},
             {"lost", static_cast<double>(st.value("submitted", 0L) - st.value("done", 0L))}};
    bench::print_result(std::to_string(answer), s, extra);
    return 0;
  }
  if (what == "start") {
    daemon_child d(workers, {"--max-running", std::to_string(max_running)});
    std::vector<double> start_us, remove_us, rtt_us;
    auto [answer, s] = bench::measure(warmup, reps, [&] {
      client cl(d.ep());
      start_us.clear();
      remove_us.clear();
      rtt_us.clear();
      long ok = 0;
      for (long i = 0; i < n; ++i) {
        const auto t0 = clock_type::now();
        const json r = cl.call(trivial(true));
        rtt_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
        if (r.value("state", "") != "done") continue;
        ++ok;
        start_us.push_back(r["timing"].value("start_us", 0.0));
        remove_us.push_back(r["timing"].value("remove_us", 0.0));
      }
      return ok;
    });
    for (const auto& [name, v] : {std::pair{"start", &start_us}, std::pair{"remove", &remove_us}, std::pair{"rtt", &rtt_us}}) {
      extra.emplace_back(std::string(name) + "_p50_us", pct(*v, 0.5));
      extra.emplace_back(std::string(name) + "_p99_us", pct(*v, 0.99));
      extra.emplace_back(std::string(name) + "_max_us", pct(*v, 1.0));
    }
    bench::print_result(std::to_string(answer), s, extra);
    return 0;
  }
  if (what == "memory") {
    std::vector<double> per_job;
    auto [answer, s] = bench::measure(warmup, reps, [&] {
      daemon_child d(1, {"--max-running", "1", "--max-queued", std::to_string(n + 16)});
      client cl(d.ep());
      const json blocker = cl.call({{"op", "submit"}, {"program", "bing"}, {"args", {{"work_ms", 10000}}}});
      const auto blocker_id = blocker["id"].get<std::uint64_t>();
      while (cl.call({{"op", "status"}, {"id", blocker_id}})["state"] != "running") {
      }
      const double rss0 = d.rss_kib();
      std::thread sender([&] {
        std::string batch;
        const std::string line = trivial(false).dump() + "\n";
        for (long i = 0; i < n; ++i) batch += line;
        cl.send_raw(batch);
      });
      long queued = 0;
      for (long i = 0; i < n; ++i)
        if (cl.receive().value("state", "") == "queued") ++queued;
      sender.join();
      const double rss1 = d.rss_kib();
      per_job.push_back((rss1 - rss0) * 1024.0 / static_cast<double>(n));
      (void)cl.call({{"op", "cancel"}, {"id", blocker_id}});
      return queued;
    });
    extra = {{"rss_bytes_per_queued_job", bench::median(per_job)},
             {"rss_bytes_per_queued_job_max", *std::max_element(per_job.begin(), per_job.end())}};
    bench::print_result(std::to_string(answer), s, extra);
    return 0;
  }
  if (what == "overload") {
    std::vector<double> stats_ms;
    double rejected_fraction = 0, offered = 0;
    auto [answer, s] = bench::measure(warmup, reps, [&] {
      daemon_child d(workers, {"--max-running", std::to_string(max_running), "--max-queued", "64"});
      // bing's mean work is 30 ms (docs/server.md): capacity = workers / 0.030 jobs/s.
      const double rate = 10.0 * workers / 0.030;
      offered = rate;
      std::atomic<bool> stop{false};
      std::atomic<long> sent{0}, rejected{0};
      std::thread load([&] {
        client cl(d.ep());
        std::thread reader([&] {
          for (;;) {
            std::optional<std::string> line;
            try {
              line = cl.receive_line();
            } catch (const std::exception&) {
              return;
            }
            if (!line) return;
            if (line->find("\"rejected\"") != std::string::npos)
              rejected.fetch_add(1, std::memory_order_relaxed);  // read after join
          }
        });
        std::mt19937_64 rng(7);
        std::exponential_distribution<double> gap(rate);
        double next = 0;
        const auto t0 = clock_type::now();
        while (!stop.load(std::memory_order_relaxed)) {  // a flag, no data behind it
          next += gap(rng);
          std::this_thread::sleep_until(t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(next)));
          cl.send({{"op", "submit"}, {"program", "bing"}, {"args", {{"seed", rng() >> 12}}}});
          sent.fetch_add(1, std::memory_order_relaxed);  // read after join
        }
        cl.shutdown_write();
        reader.join();
      });
      client probe(d.ep());
      std::vector<double> lat;
      const auto end = clock_type::now() + std::chrono::seconds(seconds);
      long answered = 0;
      while (clock_type::now() < end) {
        const auto t0 = clock_type::now();
        if (probe.call({{"op", "stats"}}).value("ok", false)) ++answered;
        lat.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        std::this_thread::sleep_until(t0 + std::chrono::milliseconds(10));
      }
      stop.store(true, std::memory_order_relaxed);
      load.join();
      stats_ms.insert(stats_ms.end(), lat.begin(), lat.end());
      rejected_fraction = static_cast<double>(rejected.load()) / std::max(1L, sent.load());
      return answered == static_cast<long>(lat.size()) ? std::string("\"all stats answered\"")
                                                       : std::string("\"stats unanswered\"");
    });
    extra = {{"offered_jobs_per_s", offered},
             {"stats_p50_ms", pct(stats_ms, 0.5)},
             {"stats_p99_ms", pct(stats_ms, 0.99)},
             {"stats_max_ms", pct(stats_ms, 1.0)},
             {"rejected_fraction", rejected_fraction}};
    bench::print_result(answer, s, extra);
    return 0;
  }
  bench::args::fail("--what must be throughput, start, memory or overload");
}
