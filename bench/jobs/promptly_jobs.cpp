// Suite `jobs`, Promptly: the trace's jobs submitted online to the embedded job server
// (promptly::server::job_server, the engine of promptlyd) on one runtime whose core-allocation
// policy is --policy (equi, drep, drep-steal-boundary, asteal, ...). Each job is a pool; its
// root task is the Bing-like parallel-for (halving recursion with promptly::join down to pieces
// of the trace's piece_units units), and records its end time as its last action.
// Driver and metrics: jobs_common.hpp.
//
// --hints exact|wrong|none: each job's size_hint (the serpt policy's size estimate) is its true
// work, units * unit_ns; `wrong` multiplies or divides it by 4 (alternately) for every third job
// (by a hash of the job's seed); `none` (the default) sends none. slowdown_mean: the mean of flow
// time / (work / P), the job's time alone on the P cores if it scaled perfectly.
//
// --generator-cpu N (default -1: off): after the warm-up, every thread of the process but the
// workers (the releasing thread, the policy thread, the job server's reaper) is pinned to CPU N and
// the workers to the other CPUs, so that the load generator and the server's own threads do not
// take CPU time from the workers (on 2 CPUs: run with --workers 1). A measurement aid for the
// question "how much of the live flow time is the generator sharing the workers' cores".
#include <dirent.h>
#include <sched.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "jobs_common.hpp"
#include "promptly/fork_join.hpp"
#include "promptly/runtime.hpp"
#include "promptly/server/job_server.hpp"

namespace {

std::uint64_t sum_pieces(std::uint64_t lo, std::uint64_t hi, std::uint64_t units, std::uint64_t piece, std::uint64_t seed) {
  if (hi - lo == 1) return jobs::bing_piece(lo * piece, std::min(units, hi * piece), seed);
  const std::uint64_t mid = lo + (hi - lo) / 2;
  auto [a, b] = promptly::join([&] { return sum_pieces(lo, mid, units, piece, seed); },
                               [&] { return sum_pieces(mid, hi, units, piece, seed); });
  return a + b;
}

// Pins each thread of this process: the runtime's workers ("promptly-w*") to every allowed CPU but
// `generator_cpu`, all others to `generator_cpu`. Fails the program if a thread cannot be pinned.
void split_cpus(int generator_cpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) bench::args::fail("sched_getaffinity failed");
  cpu_set_t gen, rest;
  CPU_ZERO(&gen);
  CPU_ZERO(&rest);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) CPU_SET(c, c == generator_cpu ? &gen : &rest);
  if (CPU_COUNT(&gen) != 1 || CPU_COUNT(&rest) == 0)
    bench::args::fail("--generator-cpu " + std::to_string(generator_cpu) +
                      " must name one of this process's allowed CPUs and leave another for the workers");
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) bench::args::fail("cannot list /proc/self/task");
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::string comm;
    std::getline(std::ifstream(std::string("/proc/self/task/") + e->d_name + "/comm"), comm);
    const pid_t tid = static_cast<pid_t>(std::stol(e->d_name));
    const cpu_set_t& set = comm.rfind("promptly-w", 0) == 0 ? rest : gen;
    if (sched_setaffinity(tid, sizeof(set), &set) != 0) bench::args::fail("cannot pin thread " + comm);
  }
  closedir(dir);
}

struct replay_state {
  const jobs::plan* plan = nullptr;
  std::vector<std::atomic<std::int64_t>> end_ns;
  std::vector<std::uint64_t> checksum;
  explicit replay_state(std::size_t n) : end_ns(n), checksum(n) {}
};

}  // namespace

int main(int argc, char** argv) {
  std::string policy = "drep";
  std::string hints = "none";
  long generator_cpu = -1;
  return jobs::main(
      argc, argv,
      [&](bench::args& a) {
        policy = a.get_string("policy", policy);
        hints = a.get_string("hints", hints);
        generator_cpu = a.get_long("generator-cpu", generator_cpu);
        if (generator_cpu < -1) bench::args::fail("--generator-cpu must be a CPU number or -1 (off)");
        if (hints != "none" && hints != "exact" && hints != "wrong")
          bench::args::fail("--hints must be none, exact or wrong, got '" + hints + "'");
      },
      [&](unsigned workers) -> jobs::run_trace_fn {
        promptly::runtime_config cfg;
        cfg.workers = workers;
        cfg.policy = policy;
        auto rt = std::make_shared<promptly::runtime>(cfg);
        promptly::server::job_server_options o;
        o.max_running = 4096;  // the policy shares the cores; no admission queue in the way
        o.max_queued = 1 << 20;
        auto srv = std::make_shared<promptly::server::job_server>(*rt, o);
        auto current = std::make_shared<std::atomic<replay_state*>>(nullptr);
        srv->register_program("job", [current](promptly::server::job_context& ctx) -> promptly::server::json {
          const auto& args = ctx.args();
          const auto i = args["i"].get<std::size_t>();
          const auto units = args["units"].get<std::uint64_t>();
          const auto seed = args["seed"].get<std::uint64_t>();
          replay_state* st = current->load(std::memory_order_acquire);  // acquire: the state's vectors
          const std::uint64_t piece = st ? st->plan->tr->piece_units : 10;
          const std::uint64_t sum = units ? sum_pieces(0, (units + piece - 1) / piece, units, piece, seed) : 0;
          if (st) {
            st->checksum[i] = sum;
            st->end_ns[i].store(jobs::now_ns(), std::memory_order_release);  // release: checksum before end
          }
          return nullptr;
        }, promptly::server::arg_schema{}.integer("i", {.min = 0}).integer("units", {.min = 0}).integer("seed", {.min = 0}));
        // Warm-up: fiber stacks, pools and the reaper thread exist before the first replay.
        for (int k = 0; k < 20; ++k) srv->submit("job", {{"i", 0}, {"units", 200}, {"seed", k}}).wait();
        if (generator_cpu >= 0) split_cpus(static_cast<int>(generator_cpu));
        return [rt, srv, current, hints](const jobs::plan& p, std::int64_t& t0) {
          replay_state st(p.count);
          st.plan = &p;
          const std::uint64_t decisions_before = rt->stats().decisions;
          current->store(&st, std::memory_order_release);  // release: publishes st to the jobs
          std::vector<promptly::server::job_handle> handles;
          handles.reserve(p.count);
          t0 = jobs::replay(p, [&](std::size_t i) {
            const jobs::job& j = p.tr->jobs[i];
            promptly::server::submit_options so;
            if (hints != "none") {
              double ms = static_cast<double>(j.units) * p.unit_ns / 1e6;
              const std::uint64_t h = j.seed * 0x9e3779b97f4a7c15ull;
              if (hints == "wrong" && (h >> 33) % 3 == 0) ms = ((h >> 40) & 1) ? ms * 4 : ms / 4;
              so.size_hint_ms = std::max(ms, 1e-6);
            }
            handles.push_back(srv->submit("job", {{"i", i}, {"units", j.units}, {"seed", j.seed}}, so));
          });
          jobs::outcome o;
          for (auto& h : handles) {
            const auto info = h.wait();
            if (info.state != promptly::server::job_state::done)
              bench::args::fail("job " + std::to_string(h.id()) + " ended " + std::string(to_string(info.state)) +
                                ": " + info.error);
          }
          current->store(nullptr, std::memory_order_release);
          // AMCilk Sec. 5.1's overheads, measured by the server and the runtime during this
          // replay (the server's windows hold the last 4096 jobs: this replay's and the warm-up's).
          const auto ss = srv->stats();
          const auto rs = rt->stats();
          o.extra_metrics = {{"start_us_p50", ss.start.p50_us},   {"start_us_p99", ss.start.p99_us},
                             {"start_us_max", ss.start.max_us},   {"setup_us_p50", ss.setup.p50_us},
                             {"setup_us_p99", ss.setup.p99_us},   {"setup_us_max", ss.setup.max_us},
                             {"remove_us_p50", ss.remove.p50_us},
                             {"remove_us_p99", ss.remove.p99_us}, {"remove_us_max", ss.remove.max_us},
                             // The root's return to the terminal state, remove included.
                             {"end_us_p50", ss.end.p50_us},       {"end_us_p99", ss.end.p99_us},
                             {"end_us_max", ss.end.max_us},
                             {"decision_us_p50", rs.decision_latency_p50_us},
                             {"decision_us_p99", rs.decision_latency_p99_us},
                             // Policy decisions per job: 2 would be one arrival and one exit each.
                             {"decisions_per_job", static_cast<double>(rs.decisions - decisions_before) /
                                                       static_cast<double>(p.count)}};
          // The runtime's mechanism (the last 512 samples of each worker and operation).
          const std::pair<const char*, const promptly::overhead_stats*> ops[] = {
              {"realloc", &rs.mechanism.realloc}, {"sleep", &rs.mechanism.sleep},   {"wake", &rs.mechanism.wake},
              {"resume", &rs.mechanism.resume},   {"mug", &rs.mechanism.mug},       {"steal", &rs.mechanism.steal}};
          for (const auto& [op, q] : ops) {
            o.extra_metrics.emplace_back(std::string(op) + "_us_p50", q->p50_us);
            o.extra_metrics.emplace_back(std::string(op) + "_us_p99", q->p99_us);
            o.extra_metrics.emplace_back(std::string(op) + "_us_max", q->max_us);
            o.extra_metrics.emplace_back(std::string(op) + "_samples", static_cast<double>(q->samples));
          }
          // Under serpt: the jobs' measured work (their pools' worker time) over their size
          // estimates, summed. With exact hints above 1 means the jobs ran slower than the work
          // unit calibrated on an idle machine said, so the load was above its nominal rho.
          double expected_s = 0, measured_s = 0;
          const auto sources = ss.size_estimates.value("sources", promptly::server::json::object());
          for (const auto& [source, e] : sources.items()) {
            expected_s += e.value("expected_s", 0.0);
            measured_s += e.value("measured_s", 0.0);
          }
          if (expected_s > 0) o.extra_metrics.emplace_back("work_over_estimate", measured_s / expected_s);
          o.end_ns.resize(p.count);
          double slowdown_sum = 0;
          for (std::size_t i = 0; i < p.count; ++i) {
            o.end_ns[i] = st.end_ns[i].load(std::memory_order_acquire);  // acquire: pairs with the job's release
            o.checksum += st.checksum[i];
            const double alone_ns = std::max(1.0, static_cast<double>(p.tr->jobs[i].units) * p.unit_ns / p.workers);
            slowdown_sum += static_cast<double>(o.end_ns[i] - (t0 + p.arrival_ns[i])) / alone_ns;
          }
          o.extra_metrics.emplace_back("slowdown_mean", slowdown_sum / static_cast<double>(p.count));
          return o;
        };
      });
}
