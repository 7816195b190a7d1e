// The policy interface (extension tier): how a policy decides which pools
// the cores serve. The shipped policies (priority policies oblivious, prompt,
// aps, fair; job policies equi, drep, drep-steal-boundary, asteal, elastic) and
// policies written by users implement the same interface; install one with
// runtime::set_policy(std::make_unique<my_policy>(...)). Guide and example:
// docs/policies.md; examples/tenant_policy.cpp (class round_robin, a user
// policy over pools made at run time).
//
// A pool is a set of ready work with its own deques and injection queue.
// Priority levels are pools with a fixed rank (level l is pool l, rank l);
// pools created at run time (runtime::create_pool, one per job of a job
// server) come and go. A core is a worker thread.
//
// The runtime calls policy::on_event for: the policy's installation, every
// quantum (while at least two pools had work in the last quantum), a pool
// added or removed, a pool becoming non-empty or empty, a pool asking for
// more cores, and, if the policy asks, a queue forming at a busy pool or work
// waiting behind other pools' strands (event_kind below). Making work ready never calls a policy: the mechanism records
// the event and the next decider (policy thread or worker) decides.
//
// Threads. Every call into a policy is made under the runtime's policy lock,
// so no two overlap and the hooks need no lock of their own for the state
// they share; but they come from several threads, so a policy keeps no
// thread-local state and assumes no particular thread:
//  * on_event: the runtime's policy thread; a worker thread at the top of
//    its scheduling loop (a busy worker decides pending events itself rather
//    than wait for the policy thread to be scheduled); and, for `installed`,
//    the thread calling runtime::set_policy, set_core_limit or set_fairness
//    (the runtime's constructor for runtime_config::policy).
//  * name, desire, fairness: any thread above, and any thread calling
//    runtime::stats() or runtime::policy().
//  * switches_only_when_out_of_work, ticks_while_one_pool_is_busy,
//    wants_backlog_events, wants_strand_events: once, at installation, on
//    the installing thread.
//  * the destructor: the thread that installs the next policy (under the
//    lock), or the one that destroys the runtime, once its workers and
//    policy thread have stopped.
// What a policy may do there: read its own state and, in on_event, the
// decision it is passed, and act through that decision only. It must never
// block (an idle worker waits for the policy lock, so a blocked policy
// stalls cores), never call the runtime (its calls take the policy lock or
// wait for workers: a deadlock), and never keep a decision, span or view
// past the call. The const hooks only read and return quickly.
//
// In on_event the policy reads the pools (most urgent first) and the cores,
// and acts: give a core to a pool, or to a ranked set of pools, take it back
// (it sleeps), let it serve every pool, or say how many cores each pool gets
// (the runtime then picks the cores, keeping each where it is when it can).
// Decisions take effect at the cores' next strand boundary (spawn, sync,
// future create or get, yield()).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "promptly/policy_params.hpp"
#include "promptly/pool.hpp"

namespace promptly::ext {

using pool_id = std::uint32_t;
inline constexpr pool_id no_pool = ~pool_id{0};

// The longest quantum: decision::set_quantum clamps a longer one to it (a
// quantum of microseconds::max() overflowed the deadline arithmetic).
inline constexpr std::chrono::microseconds max_quantum = std::chrono::hours(24);

// One live pool. Its measures (work_s, look_s, utilization) cover the time
// since the previous quantum tick of any policy (at a tick: the quantum that
// just ended), or since the pool's creation if no tick came since: a policy
// without a quantum sees the totals of the pools created under it.
struct pool_view {
  pool_id id = no_pool;
  unsigned rank = 0;                    // 0 = most urgent; levels have rank = level
  double weight = 1;                    // the pool's share weight (fair policies)
  std::chrono::nanoseconds age{0};      // time since the pool was created
  bool has_ready_work = false;          // queued or running work exists in the pool
  std::size_t queued = 0;               // ready-work hint: tasks waiting in its injection queue
  double work_s = 0;                    // worker-seconds spent running its tasks
  double look_s = 0;                    // worker-seconds spent looking for work in it
  // At a quantum tick: CPU seconds its tasks got, which work_s (wall time)
  // overstates when the OS preempts a core. Estimated from each core's
  // thread CPU clock, read at ticks only: a core's CPU time, up to its
  // wall work time, counted at the pool the previous decision put first in
  // the core's set. 0 at other decisions.
  double cpu_s = 0;
  unsigned cores = 0;                   // cores the previous decision gave it
  bool level = false;                   // a priority level (runtime_config::levels), not a pool made by create_pool
  // At a quantum tick: work was queued in the pool at this tick and at the
  // previous one, and none of its tasks started in between. Its cores made
  // no progress for a whole quantum: the OS took them (a multiprogrammed
  // machine), or each is held by one long task. False at other decisions.
  bool stalled = false;
  bool wants_more_cores = false;        // the pool asked for more cores (runtime::request_cores)
  std::optional<elastic_params> elastic;  // pool_options::elastic (elastic real-time jobs)
  double utilization() const noexcept { return work_s + look_s > 0 ? work_s / (work_s + look_s) : 0.0; }
};

// Where a core is told to be: a ranked set of pools (often one), nowhere
// (it sleeps), or every pool.
enum class core_target : std::uint8_t { pool, asleep, every_pool };

// The most pools one core's ranked set may hold (decision::serve).
inline constexpr std::size_t max_ranked_pools = 8;

// One core. Its work_s and look_s cover the time since the previous quantum
// tick, or since the runtime started if no tick came yet (as pool_view).
struct core_view {
  unsigned index = 0;
  core_target target = core_target::asleep;
  pool_id assigned = no_pool;  // the most urgent pool of the core's set (target == pool)
  std::vector<pool_id> pools;  // the core's ranked set, most urgent first (target == pool)
  pool_id serving = no_pool;   // the pool whose deque the core works on now
  double work_s = 0;
  double look_s = 0;
  double cpu_s = 0;  // at a quantum tick: CPU seconds the core's thread got in the quantum (its thread CPU clock); 0 otherwise
};

enum class event_kind {
  installed,
  quantum,
  pool_added,
  pool_removed,
  became_nonempty,
  became_empty,
  more_cores_requested,
  // Work was made ready at a pool that already had work, and its injection
  // queue now holds two tasks or more: ready work waits behind ready work.
  // Posted only to a policy whose wants_backlog_events() is true, at most
  // once per pool between two decisions.
  backlog,
  // Work of the pool has waited runtime_config::preemption.threshold while every core this
  // policy gives the pool runs a strand of another pool (code between two strand boundaries,
  // which a move cannot interrupt). Answer with decision::preempt to run the work now;
  // ignoring it keeps the work waiting for those strands to end. Posted only while
  // preemption is enabled, and only for a pool some core's assignment holds.
  waiting_behind_strands,
};

// An event may name a pool removed since it was posted (a pool asked for
// cores, then was removed before the decision): the pool is then absent
// from decision::pools(), and actions naming it are ignored. The runtime
// drops an event of a pool removed before the event is handed over, and
// never hands an event of a removed pool to a later pool given its id.
struct event {
  event_kind kind = event_kind::installed;
  pool_id pool = no_pool;            // the pool the event is about (no_pool for installed and quantum)
  std::chrono::nanoseconds elapsed{0};  // quantum: the length of the quantum that ended
};

// The view a policy decides on, and the actions it takes. Only valid during
// the on_event call it was passed to.
class decision {
 public:
  virtual ~decision() = default;
  // Live pools, most urgent first (by rank, then by age: older first).
  virtual std::span<const pool_view> pools() const noexcept = 0;
  // The live pools with ready work (has_ready_work), most urgent first: the
  // part of pools() a policy that serves only pools with work reads. Its
  // length is what it holds, not the pool count (docs/policies.md,
  // "Decision cost").
  virtual std::span<const pool_view> pools_with_work() const noexcept = 0;
  // The live pool with this id, or null.
  virtual const pool_view* find(pool_id id) const noexcept = 0;
  virtual std::span<const core_view> cores() const noexcept = 0;
  unsigned core_count() const noexcept { return static_cast<unsigned>(cores().size()); }

  // Actions naming a pool removed since (an id the runtime gave a pool that
  // is gone) are ignored, as the event they answer may be stale; an id no
  // pool ever had is an error (std::invalid_argument naming it).
  //
  // Gives core `core` to pool `pool` (AMCilk's give_core_to_container).
  // Throws std::invalid_argument naming the core or pool if either does not exist.
  virtual void give_core(unsigned core, pool_id pool) = 0;
  // Gives core `core` a ranked set of pools, most urgent first: the core
  // serves the most urgent pool of the set with ready work (queued, or
  // running on a core) and takes no work from the pools ranked below it;
  // when that pool is idle it goes on to the next by itself, and comes back
  // at its next task, or within four strand boundaries, once a pool ranked
  // above has work again (fairly prompt scheduling's primary pool plus
  // donation target, for example). Throws
  // std::invalid_argument for an unknown core, an empty set, more than
  // max_ranked_pools pools, a repeated pool or a pool that never existed
  // (pools removed since drop out of the set; a set of removed pools only
  // is ignored).
  virtual void serve(unsigned core, std::span<const pool_id> ranked) = 0;
  // Takes the core back: it sleeps until given a pool.
  virtual void take_core(unsigned core) = 0;
  // The core serves every pool, in no order, taking ready work wherever it
  // finds it (priority-oblivious). May be mixed with cores given pools.
  virtual void serve_every_pool(unsigned core) = 0;
  // Says how many cores pool `pool` gets; pools not named in this decision
  // get none. The runtime maps counts to cores after on_event returns,
  // keeping each core at its pool while that pool has room, then filling
  // pools most urgent first; cores left over sleep. Cores given or taken
  // explicitly in the same decision keep that. Throws std::invalid_argument
  // for an unknown pool.
  virtual void allot(pool_id pool, unsigned cores) = 0;
  // The donation target of the cores allot() places in this decision: each
  // such core serves the ranked set {its pool, `pool`}, so when its pool
  // runs out of work it works at `pool` without waiting for a decision, and
  // goes back as soon as its own pool has work again (fairly prompt
  // scheduling's donation of unused cycles to the most urgent pool with
  // work). no_pool, the default, donates nothing. Throws
  // std::invalid_argument for a pool that is not live.
  virtual void donate_to(pool_id pool) = 0;
  // The quantum; zero = no quantum ticks (the policy reacts to events only).
  // Negative throws std::invalid_argument; longer than max_quantum is clamped to it.
  virtual void set_quantum(std::chrono::microseconds q) = 0;
  // Runs pool `pool`'s ready work now on a standby thread, beside the strands its cores are in
  // (the kernel time-shares those cores; src/sched/README.md, "Preemption"). The standby leaves
  // when the pool has no ready work left or one of its cores arrives. Does nothing while
  // preemption is disabled, or when every standby thread is busy (the event comes again if the
  // work still waits). Throws std::invalid_argument for a pool that never existed.
  virtual void preempt(pool_id pool) = 0;
  virtual std::chrono::microseconds quantum() const noexcept = 0;
};

// What the fair policy measured of one pool since its criterion was installed.
struct fair_account {
  double share = 0;           // F(pool): the criterion, normalised
  double sampled_share = 0;   // fraction of worker-rounds whose primary was this pool
  double received_share = 0;  // fraction of all worker time spent working at this pool
  double credit_s = 0;        // worker-seconds the pool is owed (+) or has been over-served (-)
};

class policy {
 public:
  virtual ~policy() = default;
  virtual std::string_view name() const noexcept = 0;
  // Called one call at a time, on the policy thread, a worker at its loop
  // top or an installing thread (see "Threads" at the top of this file):
  // never block, never call the runtime from here. The events handed
  // over together form one decision, applied all or none: an exception
  // discards every action of the decision (the cores stay as they were).
  // The runtime decides the other events of the batch again without the
  // one that threw, and retries that one no sooner than 1 ms later (then
  // at each later decision at least 1 ms after the last failure), for as
  // long as the policy throws on it. It prints one line on stderr per
  // installed policy and counts every failure (runtime_stats::policy_failures).
  // At installation (set_policy, set_core_limit) an exception on
  // `installed` changes nothing and is rethrown to the caller.
  virtual void on_event(const event& ev, decision& d) = 0;
  // Human-readable desire per pool, for stats (policies without desire return 0).
  virtual double desire(pool_id /*pool*/) const noexcept { return 0; }
  // Fairness accounting per pool, for stats (policies without a criterion return zeros).
  virtual fair_account fairness(pool_id /*pool*/) const noexcept { return {}; }
  // When this is true, a core given to another pool does not move at its
  // next strand boundary: it finishes the work of its own deque and moves
  // when it would next steal (AMCilk's steal-boundary baseline, Sec. 5).
  // Read once at installation.
  virtual bool switches_only_when_out_of_work() const noexcept { return false; }
  // When this is true, quantum ticks continue while a single pool has work
  // (I-Cilk's exact APS, Sec. 3: desires keep growing, so a second pool that
  // appears finds the first at its measured desire). When false (default),
  // the runtime stops the ticks then: with one busy pool every policy
  // shipped gives it all cores, so ticks would only cost wake-ups. Read once
  // at installation.
  virtual bool ticks_while_one_pool_is_busy() const noexcept { return false; }
  // When this is true, the policy hears event_kind::backlog: a pool with
  // work whose queue grows gets a decision at once rather than at the next
  // quantum tick or emptying. Off by default: a policy that would decide
  // nothing new on it would only pay for the decisions. Read once at
  // installation.
  virtual bool wants_backlog_events() const noexcept { return false; }
  // When this is true, the policy hears event_kind::waiting_behind_strands and may answer with
  // decision::preempt (prompt, aps and fair do). Off by default: a policy that does not
  // preempt keeps its cores' strands uninterrupted. Read once at installation.
  virtual bool wants_strand_events() const noexcept { return false; }
};

using aps_params = promptly::aps_params;
using fair_params = promptly::fair_params;

// The shares of a criterion (one integer weight per pool, pools past the
// end weigh 0). Throws std::invalid_argument naming the problem: a negative
// weight, every weight zero, or a weight for a pool that does not exist.
std::vector<double> fair_shares(std::span<const long long> weights, std::size_t pools);

// The policies shipped with Promptly, by name: "oblivious", "prompt", "aps",
// "fair", and the job policies "equi", "drep", "drep-steal-boundary",
// "asteal", "elastic" (docs/job-policies.md). Throws std::invalid_argument naming the unknown policy or bad parameter.
std::unique_ptr<policy> make_policy(std::string_view name, const aps_params& aps = {}, const fair_params& fair = {});
std::vector<std::string> policy_names();

}  // namespace promptly::ext
