// The policy interface (extension tier): decides how many workers each pool
// gets. In the library a pool is a priority level (0 = most urgent); the
// job server will reuse the same interface with jobs as pools, so nothing
// here knows about levels, tasks or fibers.
//
// The runtime calls a policy on events (DESIGN.md, "One model for
// everything"): every quantum (if the policy wants a quantum), when a pool
// becomes non-empty and when it becomes empty. The policy returns an
// allotment: workers per pool, summing to at most the worker count; the
// runtime maps counts to workers, keeping each worker where it is when it
// can. Workers allotted to no pool sleep.
//
// A policy may also declare itself `roaming`: then allotments are ignored
// and every worker takes ready work from any pool (priority-oblivious).
//
// Allotments are counts, not worker identities, because workers are
// interchangeable within a pool: a policy that thinks per worker (the fair
// policy of "Fairness in Responsive Parallelism", ICFP 2019, samples a
// primary pool for every worker each round) returns how many workers drew
// each pool, and the runtime maps counts to workers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace promptly::ext {

// What the runtime measured of one pool in the last quantum (or since the
// previous event).
struct pool_stats {
  bool has_ready_work = false;     // queued or running work exists in the pool
  double work_s = 0;               // worker-seconds spent running tasks of the pool
  double look_s = 0;               // worker-seconds spent looking for work in the pool
  unsigned allotted = 0;           // workers the pool had (the previous allotment)
  double utilization() const noexcept { return work_s + look_s > 0 ? work_s / (work_s + look_s) : 0.0; }
};

// Parameters of the `fair` policy (the fairly prompt paper, Sec. 4).
struct fair_params {
  // roundQuantum: how long a worker keeps the primary pool it sampled.
  std::chrono::microseconds round{5000};
  // The fairness criterion: an integer weight per pool (index = pool, 0 = most
  // urgent), normalised to shares summing to 1 as the fairly prompt paper's
  // installDist (Fig. 6). Pools past the end weigh 0. Empty = every pool weighs 1.
  std::vector<long long> weights;
};

// What the fair policy measured of one pool since its criterion was installed.
struct fair_account {
  double share = 0;           // F(pool): the criterion, normalised
  double sampled_share = 0;   // fraction of worker-rounds whose primary was this pool
  double received_share = 0;  // fraction of all worker time spent working at this pool
  double credit_s = 0;        // worker-seconds the pool is owed (+) or has been over-served (-)
};

enum class pool_event { quantum, became_nonempty, became_empty };

class policy {
 public:
  virtual ~policy() = default;
  virtual std::string_view name() const noexcept = 0;
  // Quantum length, or zero if the policy only reacts to pool events.
  virtual std::chrono::microseconds quantum() const noexcept { return std::chrono::microseconds{0}; }
  // True if workers ignore allotments and serve any pool (oblivious).
  virtual bool roaming() const noexcept { return false; }
  // Recomputes the allotment. `pool` is the pool the event is about (or
  // stats.size() for a quantum tick). `allotment` has stats.size() entries
  // on entry (the previous allotment) and on exit.
  virtual void decide(pool_event ev, std::size_t pool, std::span<const pool_stats> stats, unsigned workers,
                      std::span<unsigned> allotment) = 0;
  // Human-readable desire per pool, for stats (policies without desire return 0).
  virtual double desire(std::size_t /*pool*/) const noexcept { return 0; }
  // Fairness accounting per pool, for stats (policies without a criterion return zeros).
  virtual fair_account fairness(std::size_t /*pool*/) const noexcept { return {}; }
};

// Parameters of the `aps` policy (Adaptive Priority Scheduling of I-Cilk,
// "Priority Scheduling for Interactive Applications", SPAA 2020, Sec. 3
// and 5).
struct aps_params {
  double delta = 0.9;                          // efficiency threshold, in (0, 1]
  double rho = 2.0;                            // responsiveness (desire growth factor), > 1
  std::chrono::microseconds quantum{500};      // L; the authors' scripts use 500 us
};

// The criterion as shares for `pools` pools. Throws std::invalid_argument
// naming the problem: a negative weight, every weight zero, or a weight for a
// pool that does not exist.
std::vector<double> fair_shares(std::span<const long long> weights, std::size_t pools);

// The policies shipped with Promptly, by name: "oblivious", "prompt", "aps",
// "fair". Throws std::invalid_argument naming the unknown policy or bad parameter.
std::unique_ptr<policy> make_policy(std::string_view name, std::size_t pools, const aps_params& aps = {},
                                    const fair_params& fair = {});
std::vector<std::string> policy_names();

}  // namespace promptly::ext
