// Workloads and configurations shared by the runtime tests: fork-join fib
// (a task tree with a join per call), its serial reference, and a runtime
// configuration by worker count, policy and level count, and a dump of the
// workers' and levels' states for hang reports (watchdog.hpp).
#pragma once

#include <sstream>
#include <string>

#include "promptly/promptly.hpp"

inline long fib(int n) {
  if (n < 2) return n;
  auto [a, b] = promptly::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return a + b;
}

inline long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

inline promptly::runtime_config config(unsigned workers, const std::string& policy, unsigned levels = 3) {
  promptly::runtime_config c;
  c.workers = workers;
  c.levels = levels;
  c.policy = policy;
  return c;
}

// What every worker, level and live pool is doing (runtime::stats()), for
// hang reports.
inline std::string describe(const promptly::runtime& rt) {
  const promptly::runtime_stats s = rt.stats();
  std::ostringstream o;
  o << "policy " << s.policy << ", " << s.sleeping_workers << " of " << s.workers << " workers asleep\n";
  for (std::size_t i = 0; i < s.worker_states.size(); ++i) {
    const auto& w = s.worker_states[i];
    o << "  worker " << i << ": serving " << w.serving << ", assigned " << w.assigned << ", "
      << w.state << "\n";
  }
  for (std::size_t l = 0; l < s.levels.size(); ++l)
    o << "  level " << l << ": allotted " << s.levels[l].allotted << ", ready " << s.levels[l].has_ready_work
      << ", tasks " << s.levels[l].tasks_run << "\n";
  for (const auto& p : s.pools)
    o << "  pool " << p.id << " (rank " << p.rank << "): allotted " << p.allotted << ", ready " << p.has_ready_work
      << ", tasks " << p.tasks_run << "\n";
  return o.str();
}

// True once pool p refuses work with pool_removed (a remove_pool is closing
// it); each probe that is still accepted runs an empty task in p.
inline bool refuses_work(promptly::runtime& rt, promptly::pool p) {
  try {
    (void)rt.submit(p, [] {});
    return false;
  } catch (const promptly::pool_removed&) {
    return true;
  }
}
