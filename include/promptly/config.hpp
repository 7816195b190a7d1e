// Runtime configuration: every tuning knob, with its default and constraint,
// in one place.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "promptly/policy_params.hpp"

namespace promptly {

// How idle workers wait for work.
enum class sleep_mode {
  // Taskflow's adaptive sleep protocol ("An Efficient Work-Stealing Scheduler
  // for Task Dependency Graph", Algorithms 3-5): surplus thieves sleep on an
  // EventCount after STEAL_BOUND failed steals and YIELD_BOUND yields.
  adaptive,
  // ABP-style baseline (the Taskflow executor paper, Sec. III): thieves never sleep; they yield
  // after each failed steal. Exists so benchmarks can show what sleeping saves.
  never,
};

// Preemption of long strands (src/sched/README.md, "Preemption"): when work of a pool has
// waited `threshold` while every core the policy gives that pool runs a strand of another pool
// (code that reaches no spawn, sync, get or yield), a standby thread runs the waiting work beside
// that strand, and the kernel time-shares the core between them; the standby goes back to sleep
// when the pool has no ready work left or one of the pool's own cores is back. The policy
// decides (ext::event_kind::waiting_behind_strands, ext::decision::preempt): prompt, aps and
// fair preempt; oblivious and the job policies do not.
struct preemption_params {
  bool enabled = true;
  // How long ready work may wait behind strands before it preempts one. 50 us..1 s. 100 us:
  // a 50 us urgent job behind 5 ms strands had p50 0.35 ms, against 0.47 ms at 200 us and
  // 0.30 ms at 50 us (docs/priorities.md, "Long strands").
  std::chrono::microseconds threshold{100};
  // Standby threads, each able to serve one waiting pool at a time; started on first use.
  // 1..64.
  unsigned standby_threads = 1;
};

struct runtime_config {
  // Worker threads. 0 = default_worker_count(): the CPUs in this process's
  // affinity mask, capped by a cgroup CPU quota when one is set.
  unsigned workers = 0;
  // Usable bytes of each fiber stack (a guard page is added below it).
  // Must be >= 16 KiB. Stacks are pooled; only touched pages cost memory.
  std::size_t fiber_stack_bytes = 256 * 1024;
  // Pin worker i to the i-th CPU of the affinity mask.
  bool pin_workers = false;
  sleep_mode sleep = sleep_mode::adaptive;
  // Failed steals before a thief starts yielding. 0 = 2 * (workers + 1),
  // the value of the Taskflow executor paper, Sec. III.
  unsigned steal_bound = 0;
  // Yields (each followed by a steal attempt) before a thief prepares to
  // sleep. The Taskflow executor paper (Sec. III) uses 100. A yield that
  // keeps the thief off its CPU for over 1 ms (a CPU-bound thread shares
  // it) ends the exploration sooner (src/sched/README.md).
  unsigned yield_bound = 100;
  // The same bound while no worker of the thief's pools is active; 0 =
  // yield_bound. Then only an injection (a submission, a woken future, an I/O
  // completion) can bring work, and an injection wakes a sleeper, so spinning
  // only saves that wake-up. A server of many mostly idle connections should
  // set 2: its workers then sleep between sparse events instead of spinning
  // (idle CPU 0.4x at 19,000 connections), at some cost to the tail latency of
  // bursty request traffic (docs/io.md, "Idle CPU"; src/sched/README.md).
  unsigned idle_yield_bound = 0;
  // The last awake thief, while some worker is active, naps at most this long
  // between exploration rounds instead of spinning (see src/sched/README.md,
  // "Lemma 1 with a bounded nap"). Must be > 0.
  std::chrono::microseconds sentinel_nap{1000};
  // The time slice the workers and the policy thread ask of the kernel
  // (Linux 6.12+: EEVDF takes a slice request in sched_setattr's
  // sched_runtime), 100 us..100 ms. 0 = the environment variable
  // PROMPTLY_OS_SLICE_US (microseconds) if set, else the kernel's default.
  // A shorter slice lets a woken or yielding worker get a CPU back sooner
  // from CPU-bound threads of other processes; it does not change the
  // runtime's share of the CPU. Where the program's own clients share the
  // cores it can cost them latency: measured both ways in
  // docs/priorities.md ("Beside other CPU-bound processes").
  // stats().worker_states[i].os_time_slice_us is what the kernel reports.
  std::chrono::microseconds os_time_slice{0};

  // Priority levels, 0 = most urgent. 1 <= levels <= max_levels.
  unsigned levels = 8;
  // How workers are shared between levels: "oblivious" (priorities
  // ignored), "prompt" (winner takes all), "aps" (Adaptive Priority
  // Scheduling of I-Cilk, "Priority Scheduling for Interactive Applications",
  // SPAA 2020) or "fair" (the fairly prompt scheduler of "Fairness in
  // Responsive Parallelism", ICFP 2019); for pools that are jobs, "equi",
  // "drep", "drep-steal-boundary", "asteal" or "elastic"
  // (docs/job-policies.md). Changeable at run time with runtime::set_policy.
  std::string policy = "prompt";
  // Parameters of "aps": delta, rho, quantum L.
  aps_params aps{};
  // Parameters of "fair": the round length (default 5 ms) and the fairness
  // criterion, one integer weight per level (docs/fairness.md). Changeable
  // at run time with runtime::set_fairness.
  fair_params fair{};
  // If set, one CSV line per live pool at every policy decision, with the
  // header t_s,policy,pool,desire,allotted,utilization,ready; t_s counts
  // from the runtime's construction (docs/priorities.md).
  std::string allotment_trace{};
  // If set (or, when empty, the environment variable PROMPTLY_TRACE), the
  // scheduler records what each worker and the policy thread did (tasks
  // running per pool, parks, steals, mugs, moves, sleep and wake, decisions;
  // the last 65536 events per thread) and writes them at shutdown as Chrome
  // trace-event JSON, for Perfetto UI or chrome://tracing (docs/tracing.md).
  // Off, each recording site costs one branch.
  std::string trace_file{};
  // Priority-inversion detector: count every touch, from a task, of a future
  // computed at a less urgent level than the toucher's (runtime::inversions();
  // docs/typed-priorities.md). Off: one relaxed load and a branch per touch.
  bool detect_inversions = false;
  // The readiness backend of the process's I/O reactor (docs/io.md,
  // "Backends"): "auto", "epoll" or "io_uring". The reactor is per process
  // and starts with the first I/O operation that waits; a runtime built
  // before then with "epoll" or "io_uring" decides it (else the environment
  // variable PROMPTLY_IO_BACKEND, else auto, which is epoll; io_uring falls
  // back to epoll when the kernel refuses a ring). io::stats().backend says
  // which one runs.
  std::string io_backend = "auto";
  // How long, in microseconds, the process's I/O reactor leaves the
  // descriptors to idle workers after one of their polls found work
  // (docs/io.md, "Idle workers poll"): 0..100000, 0 = workers do not poll
  // the network. -1: the environment variable PROMPTLY_IO_WORKER_POLL_US,
  // else 200. Per process like io_backend: a runtime built before the
  // reactor started with a value other than -1 decides it.
  int io_worker_poll_us = -1;
  // Preemption of strands that never reach a boundary (above).
  preemption_params preemption{};
};

inline constexpr unsigned max_levels = 64;

// The number of workers a default-configured runtime uses.
unsigned default_worker_count();

// Throws std::invalid_argument naming the offending field (including an
// unknown policy name or bad aps parameters).
void validate(const runtime_config& cfg);

std::string to_string(sleep_mode m);
// Parses "adaptive" or "never"; throws std::invalid_argument otherwise.
sleep_mode parse_sleep_mode(const std::string& name);

}  // namespace promptly
