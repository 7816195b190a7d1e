// Statistics of a running runtime (runtime::stats()): per level, per pool
// made at run time, per worker, and of the policy thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace promptly {

// One pool (a level is a pool: level l is pool l).
struct pool_stats {
  std::uint32_t id = 0;         // the pool's id (= the level for levels)
  unsigned rank = 0;            // 0 = most urgent
  double weight = 1;            // share weight (fair)
  double desire = 0;            // the policy's desire (aps), else 0
  unsigned allotted = 0;        // workers the policy gives the pool now
  unsigned serving = 0;         // workers whose deque is the pool's now and that are not asleep
  bool has_ready_work = false;  // queued or running work at the level
  double utilization = 0;       // work / (work + looking) in the last quantum or event interval
  double last_work_s = 0;       // worker-seconds working in that interval
  double last_look_s = 0;       // worker-seconds looking for work in that interval
  double work_s = 0;            // cumulative worker-seconds running tasks of the level
  double look_s = 0;            // cumulative worker-seconds looking for work at the level
  std::uint64_t tasks_run = 0;  // tasks executed in the pool
  std::uint64_t switches_in = 0;  // times a worker moved to the pool
  // 0, or when (seconds after the runtime started) the pool began to have
  // ready work that no core serves, once that lasted 0.2 s while a core
  // idled and the policy had nothing left to decide (said once on stderr):
  // a policy that never serves the pool leaves that work waiting forever.
  double unserved_since_s = 0;
  // Policy "fair" only (zeros otherwise), since its criterion was installed:
  double share = 0;           // F(level), the criterion normalised to sum 1
  double sampled_share = 0;   // fraction of worker-rounds that drew this level as primary
  double received_share = 0;  // fraction of all work done at this level, in CPU time
  double credit_s = 0;        // worker-seconds owed (+) or over-served (-), capped at one round
};
using level_stats = pool_stats;

// What one worker is doing now (a snapshot; for diagnostics and tests).
struct worker_state {
  unsigned serving = 0;  // the pool (level) whose deque the worker works on
  int assigned = -1;     // the most urgent pool of its set, the pool it serves if it serves every pool; -1 = none (it sleeps)
  std::vector<int> pools;  // its ranked set of pools, most urgent first (empty: asleep or every pool)
  bool every_pool = false; // it serves every pool
  std::string state;     // "working", "looking" (stealing) or "sleeping" (in the notifier)
  int cpu = -1;          // runtime_config::pin_workers: the CPU the worker is pinned to; -1 = not pinned
  std::int64_t os_time_slice_us = 0;  // the time slice the kernel reports for the worker's thread
                                      // (runtime_config::os_time_slice, or the kernel's default); 0 = none reported
};

// Quantiles of one mechanism timing, in microseconds.
struct overhead_stats {
  std::size_t samples = 0;
  double p50_us = 0;
  double p95_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

// What the scheduler's mechanism costs (the operations AMCilk's job server
// measures, Sec. 5.1), over the most recent samples of each worker (up to
// 512 per worker and operation).
struct mechanism_stats {
  overhead_stats realloc;  // a decision gave a core another pool -> the core serves it
  overhead_stats sleep;    // a decision gave a core no pool -> the core is asleep
  overhead_stats wake;     // a sleeping worker is notified -> it runs again
  overhead_stats resume;   // a parked task is made ready -> a worker runs it again
  overhead_stats mug;      // a worker starts looking -> it takes a whole deque left at its pool
  overhead_stats steal;    // one successful steal attempt (a task from a victim or the pool's queue)
  // Preemption: work first found waiting behind strands -> a standby thread runs it (the
  // threshold is part of it).
  overhead_stats preempt;
};

struct runtime_stats {
  std::string policy;
  unsigned workers = 0;
  unsigned core_limit = 0;      // runtime::set_core_limit (0 = every worker)
  std::uint64_t decisions = 0;  // policy decisions taken (quanta and events)
  std::uint64_t quanta = 0;     // quantum ticks decided (aps, fair)
  unsigned sleeping_workers = 0;  // workers asleep in the notifier now
  // Fibers made so far (each owns a stack); bounded by the most tasks ever
  // parked at once plus a few idle ones per worker.
  std::size_t fibers = 0;
  // Waits that blocked a worker's thread because no fiber stack could be
  // mapped (vm.max_map_count or the address-space limit reached); see
  // src/sched/README.md, "Waiting when no stack can be mapped".
  std::uint64_t blocked_waits = 0;
  // Exceptions the installed policies threw from on_event (each event
  // retried 1 ms later; the first is printed on stderr, docs/policies.md).
  std::uint64_t policy_failures = 0;
  // Preemptions: a standby thread sent to a pool whose work waited behind strands of other
  // pools (runtime_config::preemption); mechanism.preempt has their latency.
  std::uint64_t preemptions = 0;
  // Decision latency, one sample per decision taken on events or a quantum
  // tick, over the most recent 4096: for events, from the oldest event the
  // decision took to the decision applied; for a tick, from its deadline to
  // the decision applied. Decisions of set_policy / set_core_limit are not
  // sampled (nothing waited for them).
  std::size_t decision_latency_samples = 0;
  double decision_latency_p50_us = 0;
  double decision_latency_p99_us = 0;
  mechanism_stats mechanism;
  std::vector<worker_state> worker_states;
  std::vector<pool_stats> levels;  // levels 0..L-1
  std::vector<pool_stats> pools;   // live pools made by runtime::create_pool, by id
};

// Priority inversions seen at run time (runtime::inversions()).
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

}  // namespace promptly
