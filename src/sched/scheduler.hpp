// The scheduler: workers, pools (priority levels are pools 0..L-1; more come
// and go at run time), the notifier slots, and the policy thread that turns
// pool events and quantum ticks into worker assignments. Where each concept
// lives (src/sched/README.md has the protocols):
//   scheduler.cpp        construction, worker threads, shutdown
//   fiber_cache.*        the fibers: owned, idle, spare
//   pool_table.*         the pool table: ids to type-stable records, drain notices
//   pools.cpp            creating and removing pools, admission, making work ready
//   scheduling_loop.cpp  the worker loop and the waiting side of the sleep protocol, per pool
//   set_walk.hpp         walking a ranked set (shared with the simulator)
//   sleep_protocol.*     the sleep domains, their counters, waking a worker of one
//   pool_moves.*         a worker leaving and arriving at pools, its deques per pool
//   parking.cpp          waiting: parking fibers, blocking threads
//   policy_driver.cpp    the policy thread: events, quanta, stats
//   decision.cpp         what a policy sees and does (ext::decision), applied to workers
//   preemption.cpp       standby threads for work waiting behind strands of other pools
//
// Data flows one way: the mechanism (submitters, wakers, workers) makes work
// ready and records pool events (an atomic bit and a futex wake, never a
// lock that a policy holds, an allocation or a policy call); the policy
// thread alone calls the policy and writes assignments.
#pragma once

#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "checked_mutex.hpp"
#include "decision.hpp"
#include "event_bitmap.hpp"
#include "fiber.hpp"
#include "fiber_cache.hpp"
#include "notifier.hpp"
#include "pool.hpp"
#include "pool_moves.hpp"
#include "pool_table.hpp"
#include "promptly/config.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/pool.hpp"
#include "promptly/stats.hpp"
#include "sleep_protocol.hpp"
#include "worker.hpp"

namespace promptly::detail {

std::uint64_t now_ns() noexcept;  // steady clock

class scheduler {
 public:
  explicit scheduler(runtime_config cfg);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  const runtime_config& config() const noexcept { return cfg_; }
  // The cores: the workers the policy decides over (the standby threads are not counted).
  unsigned worker_count() const noexcept { return cfg_.workers; }
  unsigned standby_count() const noexcept { return static_cast<unsigned>(workers_.size()) - cfg_.workers; }
  unsigned level_count() const noexcept { return cfg_.levels; }
  bool owns(const worker_view* v) const noexcept { return v != nullptr && v->sched == this; }

  // ---- pools (pools.cpp) ----
  // The record of pool `id` if one was ever made (live or not), else null.
  pool_record* find_pool(std::uint32_t id) const noexcept { return pools_.find(id); }
  pool_record& pool_at(std::uint32_t id) const noexcept { return pools_.at(id); }
  std::uint32_t create_pool(const pool_options& opts);
  void remove_pool(std::uint32_t id);
  void on_drained(std::uint32_t id, std::function<void()> fn);
  void request_cores(std::uint32_t id);
  void check_pool(std::uint32_t id) const;
  void admit(std::uint32_t id, admission from);
  void count_started(std::uint32_t id) noexcept;
  void count_finished(std::uint32_t id) noexcept;
  std::size_t live_pool_count() const noexcept { return pools_.live_count(); }

  // Algorithm 1: push to a pool's injection queue and wake a worker of it.
  // Noexcept and allocation-free (the queue is intrusive): also the wake
  // path of a parked fiber (resumed = true).
  void inject(task* t, bool resumed = false) noexcept;
  void make_ready(worker_view* w, task* t, std::uint32_t pool) noexcept;
  void inject_batch(task* const* tasks, std::size_t count, std::uint32_t pool) noexcept;
  class foreign_injection;  // pools.cpp: a non-worker thread inside inject
  // Shutdown: stop accepting, wait for accepted work, stop the workers.
  void shutdown();

  // ---- policy (policy_driver.cpp) ----
  void set_policy(const std::string& name);
  void set_policy(std::unique_ptr<ext::policy> p);
  void set_fairness(std::vector<long long> weights);
  // Occupancy control (AMCilk, Sec. 4.2): the policy decides over cores
  // 0..n-1 only and the others sleep; 0 = every core. Throws
  // std::invalid_argument if n exceeds the workers.
  void set_core_limit(unsigned n);
  unsigned core_limit() const noexcept { return core_limit_.load(std::memory_order_relaxed); }  // relaxed: a setting read for stats
  // The installed policy's ext::policy::switches_only_when_out_of_work.
  bool switches_when_out_of_work() const noexcept {
    return switch_when_out_of_work_.load(std::memory_order_relaxed);  // relaxed: a mode; a stale read only delays or hastens one move
  }
  std::string policy_name() const;
  runtime_stats stats() const;

  // ---- used by the scheduling loop and parking (same library) ----
  void run_scheduling_loop();
  // Mechanism timings (mechanism_samples.hpp): ns since a now_ns() stamp,
  // and a wake-up's latency as commit_wait returns it (0 = not woken).
  static std::uint64_t elapsed_since(std::uint64_t start_ns) noexcept;
  static void record_wake(worker& w, std::uint64_t wake_ns) noexcept;
  // Records an event in w's trace ring when tracing (one branch when not).
  void trace(worker& w, trace_kind kind, std::uint32_t pool, std::uint32_t arg = 0, std::uint32_t arg2 = 0) noexcept {
    if (tracing_) [[unlikely]]
      w.trace.record(kind, now_ns(), pool, arg, arg2);
  }
  bool tracing() const noexcept { return tracing_; }
  // Records that the calling thread (`w`: its worker view, null or another
  // runtime's if it is no worker of this one) made `what` ready in `pool`:
  // kind spawn (a task; a submit on the external track when the caller is
  // no worker) or wake_ready (a parked fiber). Only while tracing.
  void trace_ready(const worker_view* w, trace_kind kind, std::uint32_t pool, std::uint32_t what) noexcept;
  // An idle fiber for w (fiber_cache.hpp), else a new one running the
  // scheduling loop; throws if no stack can be mapped.
  fiber_record& take_idle_fiber(worker& w);
  // A fiber suspended in the loop becomes idle on worker w (fiber_cache.hpp).
  void make_fiber_idle(worker& w, fiber_record& f) { fibers_.make_idle(w, f); }
  // As take_idle_fiber, but null (and a one-time warning) when no new fiber
  // stack can be mapped: the caller falls back to a mode that cannot fail.
  fiber_record* try_take_idle_fiber(worker& w) noexcept;
  // Parking failed: blocks the worker's thread until the event. While it
  // blocks the worker is not counted active, so its pool can look empty and
  // the policy can send the pool's other workers to the awaited work.
  void block_worker(worker& w, publish_fn publish, void* event);

 private:
  friend worker_view* detail::switch_pool_at_boundary();
  void worker_main(worker& w);

  // scheduling_loop.cpp
  // The set-walking rules (set_walk.hpp) read pools through this.
  auto ready_in_pool() const noexcept {
    return [this](std::uint32_t id) noexcept { return pool_at(id).has_ready_work(); };
  }
  unsigned pool_to_serve(worker& w) noexcept;  // the loop top's pick from w's set
  void refresh_boundary_word(worker& w) noexcept;
  bool more_urgent_work_in_set(worker& w) noexcept;
  bool ready_work_ranked_above(const pool_set& s, std::uint32_t pool) noexcept;  // set_walk.hpp, on this runtime's pools
  task* find_work(worker& w);                   // mugging, then Algorithm 5
  task* wait_for_task(worker& w);               // Algorithm 5 over w's set
  task* explore_task(worker& w);                // Algorithm 4
  task* wait_never_sleeping(worker& w);         // the ABP-style baseline
  task* steal_once(worker& w);
  task* take_injected(worker& w, pool_record& p) noexcept;  // settled by the loop once active
  bool moved(const worker& w) const noexcept;
  void sleep_unassigned(worker& w);
  void become_active(worker& w) noexcept;
  void become_inactive(worker& w) noexcept;
  void set_phase(worker& w, worker_phase p) noexcept;

  // pool_moves.cpp
  void leave_pool(worker& w);
  void arrive_at_pool(worker& w, std::uint32_t target);
  void move_to_pool(worker& w, std::uint32_t target);

  // preemption.cpp
  void note_work_without_taker(std::uint32_t pool) noexcept;  // the make-ready paths, after their wake-up
  std::uint64_t watch_preemption_locked(std::uint64_t now);   // the next check (ns), 0 = none
  void send_standby_locked(std::uint32_t pool);
  bool held_by_strands_locked(std::uint32_t pool) const;
  void recall_standby_locked(std::size_t standby);
  void note_standby_started(worker& w) noexcept;

  // policy_driver.cpp
  void note_nonempty(std::uint32_t pool) noexcept;
  // Who takes the decision on an event: the policy thread (woken), or a
  // worker at its loop top (the poster itself, or the workers it asks:
  // a worker preempts nobody).
  enum class decider { policy_thread, poster };
  // True if it posted the event.
  bool note_maybe_empty(std::uint32_t pool, decider who = decider::policy_thread) noexcept;
  // Asks the workers to decide pending events; false when the policy thread must (policy_driver.cpp).
  bool ask_workers_to_decide() noexcept;
  // Posts a pool's event for a worker to decide, or the policy thread when
  // no worker can (note_nonempty's path, for the pool table's events).
  void post_event_for_workers(event_bitmap& events, std::uint32_t pool) noexcept;
  // Some event is posted and not yet taken by a decision.
  bool events_posted() const noexcept;
  // Sets decide_request in v's word; false if the policy put v to sleep.
  bool ask_to_decide(worker& v) noexcept;

  void post_event(event_bitmap& events, std::uint32_t pool, decider who = decider::policy_thread) noexcept;
  void poke_driver() noexcept;
  void install_policy_locked(std::unique_ptr<ext::policy> p);
  // One decision per batch; the first throws to the caller (nothing
  // applied), the follow-ups it causes are decided as decide_isolating_locked.
  void decide_locked(std::vector<ext::event> events);
  void refresh_pool_views_locked(bool full, bool advance, std::span<const ext::event> events);
  // Decides `events`; returns the follow-up events (belief flips). On a
  // throw, nothing is applied and `failed` is the index of the event that threw.
  std::vector<ext::event> decide_once_locked(const std::vector<ext::event>& events, std::size_t& failed);
  // Decides `events` and their follow-ups; an event the policy throws on is
  // set aside for a retry (deferred_) and the rest decided without it.
  void decide_isolating_locked(std::vector<ext::event> events);
  void policy_failed_locked(std::vector<ext::event>& events, std::size_t failed, const char* what);
  bool served_locked(std::uint32_t pool) const;  // some usable core's set holds it (or serves every pool)
  void note_unserved_locked();  // from the kept view's pools with work
  std::uint64_t watch_unserved_locked(std::uint64_t now);  // the next check (ns), 0 = none
  // Fills core_view::cpu_s, and pool_view::cpu_s of the kept view at the
  // pools the cores served (the tick read them again).
  void add_cpu_time_locked(std::vector<ext::core_view>& cores);
  std::vector<ext::core_view> view_cores_locked(bool advance);
  std::vector<unsigned> cores_by_pool() const;
  void apply_locked(const std::vector<pool_set>& next);
  unsigned usable_cores() const noexcept;
  void driver_main();
  void handle_events_locked();
  void decide_at_loop_top(bool idle) noexcept;
  void advance_quantum_locked(std::chrono::steady_clock::time_point now);
  void trace_locked(std::span<const ext::pool_view> pools);
  void record_latency_locked(std::uint64_t ns);

  runtime_config cfg_;
  std::vector<std::unique_ptr<worker>> workers_;
  sleep_protocol sleep_{workers_};  // the sleep domains and waking a worker of one
  alignas(64) std::atomic<std::int64_t> outstanding_{0};  // accepted, unfinished counted tasks (all pools)
  std::atomic<bool> accepting_{true};
  std::atomic<int> foreign_injectors_{0};  // non-worker threads inside inject (pools.cpp)
  std::atomic<bool> stopping_{false};
  std::once_flag shutdown_once_;

  pool_table pools_;  // ids to type-stable records, the identity lock, drain notices
  pool_moves moves_;  // the workers' deques per pool, and leaving and arriving at pools
  fiber_cache fibers_;  // owns every fiber record; idle fibers kept for reuse

  // Pool events posted to the policy thread.
  event_bitmap became_nonempty_, maybe_empty_, pools_added_, pools_removed_, cores_requested_, backlogged_;
  // The installed policy's ext::policy::wants_backlog_events (relaxed: a
  // mode read on the make-ready path; a stale read posts or skips one event).
  std::atomic<bool> backlog_events_{false};
  // The installed policy's ext::policy::wants_strand_events (relaxed: as backlog_events_).
  std::atomic<bool> strand_events_{false};
  std::atomic<std::uint64_t> oldest_event_ns_{0};  // when the oldest undecided event was posted (0: none)
  std::atomic<bool> driver_poked_{false};  // the policy changed: recompute the quantum deadline
  sleep_slot driver_slot_;
  std::atomic<std::uint64_t> blocked_waits_{0};  // waits that blocked a worker thread (no fiber stack)

  // Policy thread state, guarded by policy_mutex_.
  mutable checked_mutex policy_mutex_;
  std::unique_ptr<ext::policy> policy_;
  std::chrono::microseconds quantum_{0};
  // Every usable core serves every pool (cores past the limit sleep): no
  // decision can change what a core does, so no pool events are posted and
  // no quanta tick. Written by apply_locked.
  std::atomic<bool> every_core_serves_every_pool_{false};
  std::vector<pool_set> applied_;  // each core's assignment as last applied (policy_mutex_)
  std::atomic<unsigned> core_limit_{0};  // set_core_limit; written under policy_mutex_
  std::atomic<bool> switch_when_out_of_work_{false};  // the installed policy moves cores only when out of work
  std::vector<std::uint64_t> seen_core_work_ns_, seen_core_look_ns_;
  std::vector<ext::pool_view> last_quantum_;  // the pools the last quantum tick read (stats; the others accrued nothing)
  // The pools' view kept between decisions (refresh_pool_views_locked):
  // pool_views_ sorted most urgent first with each one's creation_seq,
  // view_index_ from id to position (absent_view: not live), the ids to read
  // again at the next view (view_dirty_, view_marked_ deduplicates), the ids
  // read by the last one (view_refreshed_), the positions of the pools with
  // ready work at the last view, ascending (view_busy_), and their views
  // (views_with_work_).
  static constexpr std::uint32_t absent_view = ~std::uint32_t{0};
  std::vector<ext::pool_view> pool_views_, views_with_work_;
  std::vector<std::uint64_t> pool_view_seq_;
  std::vector<std::uint32_t> view_index_, view_dirty_, view_refreshed_, view_busy_;
  std::vector<bool> view_marked_;
  std::vector<std::uint32_t> view_since_tick_;  // ids read since the last quantum tick
  std::vector<bool> view_read_since_tick_;      // by id: in view_since_tick_
  bool pool_views_valid_ = false;
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
  // Preemption (preemption.cpp): pools whose new work nobody was counted at (set by the
  // make-ready paths), the pools watched for the threshold, and each standby's pool
  // (no_pool: standing by). The vectors are guarded by policy_mutex_.
  event_bitmap waiting_unserved_;
  struct watched_pool {
    std::uint32_t id;
    std::uint64_t creation_seq;
    std::uint64_t since_ns;
    std::uint64_t tasks;  // pool_record::tasks when the watch began
  };
  std::vector<watched_pool> watched_;
  struct waited {
    std::uint32_t pool;
    std::uint64_t since_ns;
  };
  std::vector<waited> waited_since_;  // the pools of the waiting_behind_strands events being decided
  std::vector<std::uint32_t> standby_pool_;
  std::atomic<std::uint64_t> preemptions_{0};
  bool unserved_suspected_ = false;  // a decision left a pool with work and no core
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
  std::ofstream trace_;
  // The event trace (event_trace.hpp): fixed at construction.
  bool tracing_ = false;
  std::string trace_path_;
  trace_ring policy_trace_;  // guarded by policy_mutex_
  trace_ring external_trace_;  // threads that are no worker; guarded by external_trace_lock_
  std::atomic_flag external_trace_lock_;
  void trace_external(trace_kind kind, std::uint32_t pool, std::uint32_t arg, std::uint32_t arg2) noexcept;
  std::uint64_t trace_t0_ns_ = 0;
  void start_trace();
  void write_trace() noexcept;
  std::thread driver_;
};

}  // namespace promptly::detail
