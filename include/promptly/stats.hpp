// Per-level statistics of a running runtime (runtime::stats()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace promptly {

struct level_stats {
  double desire = 0;            // the policy's desire (aps), else 0
  unsigned allotted = 0;        // workers the policy gives the level now
  bool has_ready_work = false;  // queued or running work at the level
  double utilization = 0;       // work / (work + looking) in the last quantum or event interval
  double last_work_s = 0;       // worker-seconds working in that interval
  double last_look_s = 0;       // worker-seconds looking for work in that interval
  double work_s = 0;            // cumulative worker-seconds running tasks of the level
  double look_s = 0;            // cumulative worker-seconds looking for work at the level
  std::uint64_t tasks_run = 0;  // tasks executed at the level
  std::uint64_t switches_in = 0;  // times a worker moved to the level
  // Policy "fair" only (zeros otherwise), since its criterion was installed:
  double share = 0;           // F(level), the criterion normalised to sum 1
  double sampled_share = 0;   // fraction of worker-rounds that drew this level as primary
  double received_share = 0;  // fraction of all worker time spent working at this level
  double credit_s = 0;        // worker-seconds owed (+) or over-served (-), capped at one round
};

// What one worker is doing now (a snapshot; for diagnostics and tests).
struct worker_state {
  unsigned serving = 0;  // the level whose deque the worker works on
  int assigned = -1;     // the level the policy gave it; -1 = none (it sleeps)
  std::string state;     // "working", "looking" (stealing) or "sleeping" (in the notifier)
};

struct runtime_stats {
  std::string policy;
  unsigned workers = 0;
  std::uint64_t decisions = 0;  // policy decisions taken (quanta and events)
  std::uint64_t quanta = 0;     // quantum ticks decided (aps, fair)
  unsigned sleeping_workers = 0;  // workers asleep in the notifier now
  // Waits that blocked a worker's thread because no fiber stack could be
  // mapped (vm.max_map_count or the address-space limit reached); see
  // src/sched/README.md, "Waiting when no stack can be mapped".
  std::uint64_t blocked_waits = 0;
  std::vector<worker_state> worker_states;
  std::vector<level_stats> levels;
};

// ---- priority inversions seen at run time (runtime::inversions()) ----
// One pair of levels: tasks at toucher_level touched futures computed at the
// less urgent touched_level, `count` times.
struct inversion_report {
  unsigned toucher_level = 0;
  unsigned touched_level = 0;
  std::uint64_t count = 0;
};

struct inversion_stats {
  bool enabled = false;                 // runtime_config::detect_inversions
  std::uint64_t total = 0;              // inversions seen so far
  std::vector<inversion_report> pairs;  // one per pair of levels seen, in order of first sight
};
// ---- end priority inversions ----

}  // namespace promptly
