// The policy driver: feeds the policy its events (installation, quantum
// ticks, pools added, removed, becoming non-empty or empty, asking for
// cores, a queue forming at a pool with work) with a view of the pools and
// cores, and applies what it decides by setting workers' assignments
// (I-Cilk, Sec. 5: "the master alerts a worker to switch priority by
// setting a per-worker flag, checked at each strand boundary").
//
// Invariants
//  * Only the policy thread, a worker at its loop top (decide_at_loop_top:
//    try_lock, or lock when it is idle) and the API calls that install a
//    policy call into the policy; they hold policy_mutex_, which guards
//    policy_, the quantum state, the seen_* baselines, the latency samples
//    and the trace. No holder waits for a worker, so a worker may wait for it.
//    The mechanism only records events (event_board.hpp, which states the
//    posting side's invariants and the belief protocol with submitters):
//    the driver takes them and decides; stats() reads (runtime_stats.cpp).
//    The rest of the scheduler calls the entry points below and never
//    reads the state behind them; the driver calls down into the event
//    board, the pool table, the workers' assignment words and the standby
//    threads (preemption.hpp), and nothing calls back up.
//  * The kept view (kept_view.hpp, under policy_mutex_) states its own
//    invariants; the driver reads it through its accessors.
//  * A decision is all or none: the policy's actions go to a decision_impl
//    that is applied only after on_event returned for every event of the
//    batch. An event it threw on waits in deferred_ (never in a bitmap, so
//    no worker is asked to decide it and idle workers sleep) until
//    retry_at_ns_, 1 ms after the last failure; the rest of the batch is
//    decided at once without it. Each failure removes one event from the
//    batch, so a batch ends. Events of a pool that is not live, or of an
//    earlier pool on the same id (creation_seq), are dropped when taken.
//  * unserved_ holds pools a decision left with ready work and no core;
//    the policy thread reports one once it lasted unserved_report_ns while
//    a core idled and nothing was left to decide (watch_unserved_locked).
//  * The thread decides on the quantum deadline whatever else wakes it
//    (events never push the deadline out). Quanta run while at least two
//    pools (one, if the policy asks: ticks_while_one_pool_is_busy) had work
//    during the last quantum (believed non-empty now, or
//    reported non-empty since the last tick); otherwise the thread sleeps
//    until an event: with one busy pool every policy shipped gives it all
//    cores whatever it measured, so quanta would only cost wake-ups.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "assignment.hpp"
#include "checked_mutex.hpp"
#include "event_board.hpp"
#include "event_trace.hpp"
#include "kept_view.hpp"
#include "pool_table.hpp"
#include "preemption.hpp"
#include "promptly/config.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/stats.hpp"
#include "worker.hpp"

namespace promptly::detail {

class policy_driver {
 public:
  // The references are the scheduler's and outlive the driver; `workers` is
  // filled (the cores, then the standbys) before start(). `cfg` is the
  // scheduler's configuration, whose policy name and fairness weights the
  // driver updates as it installs policies; `standbys` the standby threads
  // after the cores (preemption.hpp). `stopping` is the scheduler's
  // stop flag, which the driver stores under its lock (stop) and reads.
  policy_driver(runtime_config& cfg, pool_table& pools, const std::vector<std::unique_ptr<worker>>& workers,
                event_board& board, unsigned standbys, std::atomic<bool>& stopping);
  ~policy_driver();
  policy_driver(const policy_driver&) = delete;
  policy_driver& operator=(const policy_driver&) = delete;

  // ---- set-up and shutdown (the scheduler's constructor and shutdown) ----
  // Marks the runtime's start (the clock of the allotment trace and of
  // stats' unserved_since_s) and opens the allotment trace if `path` is set;
  // throws std::invalid_argument if it cannot.
  void start_clock(const std::string& allotment_trace);
  // Records the policy's decisions in a ring of `kept` events (event_trace.hpp).
  void start_trace(std::size_t kept);
  // Starts the policy thread.
  void start();
  // Stores the stop flag under the lock and joins the policy thread.
  void stop();
  // The policy's trace ring, once the policy thread has stopped.
  const trace_ring& trace() const noexcept { return policy_trace_; }

  // ---- the API's entry points (runtime.hpp) ----
  void set_policy(const std::string& name);
  void set_policy(std::unique_ptr<ext::policy> p);
  void set_fairness(std::vector<long long> weights);
  // Occupancy control (AMCilk, Sec. 4.2): the policy decides over cores
  // 0..n-1 only and the others sleep; 0 = every core. Throws
  // std::invalid_argument if n exceeds the workers.
  void set_core_limit(unsigned n);
  unsigned core_limit() const noexcept { return core_limit_.load(std::memory_order_relaxed); }  // relaxed: a setting read for stats
  std::string policy_name() const;
  // A snapshot of the pools, cores, the policy's accounts and the
  // mechanism's timings (runtime_stats.cpp); `fibers` and `blocked_waits`
  // are the mechanism's counts.
  runtime_stats stats(std::size_t fibers, std::uint64_t blocked_waits) const;
  // One pool's entry of stats(), without the rest (no walk over every
  // pool); nullopt if id is not a live or closing pool.
  std::optional<pool_stats> stats_of(std::uint32_t id) const;

  // ---- the workers' entry points ----
  // The installed policy's ext::policy::switches_only_when_out_of_work.
  bool switches_when_out_of_work() const noexcept {
    return switch_when_out_of_work_.load(std::memory_order_relaxed);  // relaxed: a mode; a stale read only delays or hastens one move
  }
  // Decides pending events at a worker's loop top (`idle`: it has no work of its own).
  void decide_at_loop_top(bool idle) noexcept;

 private:
  unsigned worker_count() const noexcept { return cfg_.workers; }
  unsigned level_count() const noexcept { return cfg_.levels; }
  unsigned standby_count() const noexcept { return static_cast<unsigned>(workers_.size()) - cfg_.workers; }
  pool_record& pool_at(std::uint32_t id) const noexcept { return pools_.at(id); }

  void install_policy_locked(std::unique_ptr<ext::policy> p);
  // One decision per batch; the first throws to the caller (nothing
  // applied), the follow-ups it causes are decided as decide_isolating_locked.
  void decide_locked(std::vector<ext::event> events);
  // Decides `events`; returns the follow-up events (belief flips). On a
  // throw, nothing is applied and `failed` is the index of the event that threw.
  std::vector<ext::event> decide_once_locked(const std::vector<ext::event>& events, std::size_t& failed);
  // Decides `events` and their follow-ups; an event the policy throws on is
  // set aside for a retry (deferred_) and the rest decided without it.
  void decide_isolating_locked(std::vector<ext::event> events);
  void policy_failed_locked(std::vector<ext::event>& events, std::size_t failed, const char* what);
  std::optional<std::vector<std::uint32_t>> served_pools_locked() const;  // sorted; nullopt: a core serves every pool
  void note_unserved_locked(std::uint64_t now);  // from the kept view's pools with work
  std::uint64_t watch_unserved_locked(std::uint64_t now);  // the next check (ns), 0 = none
  std::uint64_t watch_preemption_locked(std::uint64_t now);  // the next check (ns), 0 = none
  // Fills core_view::cpu_s, and pool_view::cpu_s of the kept view at the
  // pools the cores served (the tick read them again).
  void add_cpu_time_locked(std::vector<ext::core_view>& cores);
  std::vector<ext::core_view> view_cores_locked(bool advance);
  std::vector<unsigned> cores_by_pool() const;
  pool_stats pool_stats_locked(std::uint32_t id, unsigned allotted, std::uint64_t now) const;
  void apply_locked(const std::vector<pool_set>& next);
  unsigned usable_cores() const noexcept;
  // The usable cores' assignments as applied (policy_mutex_).
  std::span<const pool_set> usable_assignments() const noexcept { return std::span(applied_).first(usable_cores()); }
  void driver_main();
  void handle_events_locked();
  void advance_quantum_locked(std::chrono::steady_clock::time_point now);
  void trace_locked(std::span<const ext::pool_view> pools);
  void record_latency_locked(std::uint64_t ns);

  runtime_config& cfg_;
  pool_table& pools_;
  const std::vector<std::unique_ptr<worker>>& workers_;
  event_board& board_;
  std::atomic<bool>& stopping_;

  // Policy thread state, guarded by policy_mutex_.
  mutable checked_mutex policy_mutex_;
  standby_dispatch standbys_;  // preemption's bookkeeping (policy_mutex_)
  std::unique_ptr<ext::policy> policy_;
  std::chrono::microseconds quantum_{0};
  std::vector<pool_set> applied_;  // each core's assignment as last applied (policy_mutex_)
  std::vector<bool> to_wake_;      // apply_locked's cores with a new word, sized once (policy_mutex_)
  std::atomic<unsigned> core_limit_{0};  // set_core_limit; written under policy_mutex_
  std::atomic<bool> switch_when_out_of_work_{false};  // the installed policy moves cores only when out of work
  std::vector<std::uint64_t> seen_core_work_ns_, seen_core_look_ns_;
  // The pools the last quantum tick read (stats; the others accrued nothing),
  // sorted by id: stats() looks up every pool here, O(pools log k).
  std::vector<ext::pool_view> last_quantum_;
  // The last tick's view of pool `id`, or null if the tick did not read it.
  const ext::pool_view* last_quantum_view(std::uint32_t id) const noexcept;
  kept_view view_;  // the pools' view kept between decisions
  std::vector<std::uint64_t> latency_ns_;  // event posted (or tick due) -> decision applied, the most recent decisions
  // Events the policy threw on, each with its pool's creation_seq (an event
  // of a removed pool is dropped, never handed to the next pool on the id),
  // retried at a decision no sooner than retry_at_ns_ (policy_mutex_).
  struct deferred_event {
    ext::event ev;
    std::uint64_t creation_seq;
  };
  std::vector<deferred_event> deferred_;
  std::uint64_t retry_at_ns_ = 0;
  std::uint64_t policy_failures_ = 0;   // every exception from on_event (stats)
  bool policy_failure_reported_ = false;  // the installed policy's one stderr line
  // Pools with ready work that no core serves while a core idles
  // (watch_unserved_locked; policy_mutex_).
  struct unserved_pool {
    std::uint32_t id;
    std::uint64_t creation_seq;
    std::uint64_t since_ns;
    bool reported;
  };
  std::vector<unserved_pool> unserved_;
  // When watch_unserved_locked next walks unserved_: no entry can be due
  // before (0 = at the next call).
  std::uint64_t unserved_check_ns_ = 0;
  std::uint64_t last_unserved_note_ns_ = 0;  // the last note_unserved_locked
  bool unserved_note_pending_ = false;       // a decision since then was not noted
  std::vector<std::uint64_t> seen_core_cpu_ns_;  // each core's thread CPU clock at the last tick
  std::uint64_t latency_next_ = 0;
  std::uint64_t decisions_ = 0;
  std::uint64_t quanta_ = 0;
  // Busy pools needed to keep quanta ticking: 1 if the installed policy's
  // ticks_while_one_pool_is_busy(), else 2. Guarded by policy_mutex_.
  std::size_t busy_pools_for_quanta_ = 2;
  // The next quantum tick, or none while fewer than two pools have work.
  std::optional<std::chrono::steady_clock::time_point> next_quantum_;
  std::chrono::steady_clock::time_point last_tick_;
  std::vector<std::uint32_t> nonempty_since_tick_;  // pools that became non-empty since the last tick
  std::chrono::steady_clock::time_point started_;
  std::ofstream trace_;  // the allotment trace (runtime_config::allotment_trace)
  // The event trace (event_trace.hpp): fixed before the threads start.
  bool tracing_ = false;
  trace_ring policy_trace_;  // guarded by policy_mutex_
  std::thread driver_;
};

}  // namespace promptly::detail
