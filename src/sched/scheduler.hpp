// The scheduler: workers, one pool per priority level (injection queue,
// muggable deques, seed 002 counters), the notifier slots, and the policy
// driver thread that turns pool events and quantum ticks into worker
// assignments. The scheduling loop and the sleep protocol are in
// scheduling_loop.cpp, waiting and level switches in parking.cpp, the policy
// driver in policy_driver.cpp. See README.md in this folder for the protocols.
//
// Data flows one way: the mechanism (submitters, wakers, workers) makes work
// ready and posts pool events (post_event: an atomic bit and a futex wake,
// never a lock, an allocation or a policy call); the driver thread alone
// calls the policy and writes assignments.
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
#include "fiber.hpp"
#include "injection_queue.hpp"
#include "level_pool.hpp"
#include "notifier.hpp"
#include "promptly/config.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/stats.hpp"
#include "worker.hpp"

namespace promptly::detail {

class scheduler {
 public:
  explicit scheduler(runtime_config cfg);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  const runtime_config& config() const noexcept { return cfg_; }
  unsigned worker_count() const noexcept { return static_cast<unsigned>(workers_.size()); }
  unsigned level_count() const noexcept { return static_cast<unsigned>(levels_.size()); }
  bool owns(const worker_view* v) const noexcept { return v != nullptr && v->sched == this; }

  // Algorithm 1: push to a level's injection queue and wake a worker of it.
  void inject(task* t);
  // The wake path of a parked fiber (noexcept, allocation-free): the
  // calling worker's deque when it serves t's level and has room, else the
  // level's injection queue.
  void make_ready(linked_task* t) noexcept;
  void inject_batch(task* const* tasks, std::size_t count, unsigned level);
  // Shutdown: stop accepting, wait for accepted work, stop the workers.
  void shutdown();
  void admit();  // throws runtime_stopped once shutdown began

  void detached_started() noexcept { outstanding_.fetch_add(1, std::memory_order_relaxed); }
  void detached_finished() noexcept { outstanding_.fetch_sub(1, std::memory_order_acq_rel); }

  // Policy (policy_driver.cpp).
  void set_policy(const std::string& name);
  void set_policy(std::unique_ptr<ext::policy> p);
  void set_fairness(std::vector<long long> weights);
  std::string policy_name() const;
  runtime_stats stats() const;

  // --- used by the scheduling loop and parking (same library) ---
  void run_scheduling_loop();
  fiber_record& take_idle_fiber(worker& w);
  // As take_idle_fiber, but null (and a one-time warning) when no new fiber
  // stack can be mapped: the caller falls back to a mode that cannot fail.
  fiber_record* try_take_idle_fiber(worker& w) noexcept;
  // Parking failed: blocks the worker's thread until the event. While it
  // blocks the worker is not counted active, so its level can look empty and
  // the policy can send the level's other workers to the awaited work.
  void block_worker(worker& w, publish_fn publish, void* event);

 private:
  friend worker_view* detail::switch_level_at_boundary();
  void worker_main(worker& w);

  // scheduling_loop.cpp
  task* find_work(worker& w);                 // mugging, then Algorithm 5
  task* wait_for_task(worker& w);             // Algorithm 5 at w.level
  task* explore_task(worker& w, bool roaming);  // Algorithm 4
  task* wait_never_sleeping(worker& w);       // the ABP-style baseline
  task* steal_once(worker& w, bool roaming);
  bool moved(const worker& w, bool roaming) const noexcept;
  void sleep_unassigned(worker& w);
  void become_active(worker& w) noexcept;
  void become_inactive(worker& w) noexcept;
  void leave_level(worker& w);
  void arrive_at_level(worker& w, unsigned target);
  void move_to_level(worker& w, unsigned target);
  void adopt_deque(worker& w, task_deque* d);
  void set_phase(worker& w, worker_phase p) noexcept;
  void notify_level(unsigned level) noexcept;
  task_deque* new_deque();

  // policy_driver.cpp
  void install_policy_locked(std::unique_ptr<ext::policy> p);
  // decide_here: the caller may run the policy (never the noexcept wake
  // path); see decide_now.
  void note_nonempty(unsigned level, bool decide_here = false) noexcept;
  void note_maybe_empty(unsigned level) noexcept;
  void post_event(std::atomic<std::uint64_t>& pending, unsigned level) noexcept;
  void poke_driver() noexcept;
  bool decide_now(unsigned level) noexcept;
  void decide_locked(ext::pool_event ev, std::size_t level);
  void apply_allotment_locked();
  void driver_main();
  void handle_events_locked();
  void advance_quantum_locked(std::chrono::steady_clock::time_point now);
  std::vector<ext::pool_stats> collect_stats_locked(bool advance);
  void trace_locked();

  runtime_config cfg_;
  std::vector<std::unique_ptr<level_pool>> levels_;
  std::vector<std::unique_ptr<worker>> workers_;
  alignas(64) std::atomic<std::int64_t> outstanding_{0};  // accepted, unfinished detached tasks
  std::atomic<bool> accepting_{true};
  std::atomic<bool> stopping_{false};
  std::once_flag shutdown_once_;

  std::mutex deques_mutex_;
  std::vector<std::unique_ptr<task_deque>> deques_;   // owns every deque
  std::mutex fibers_mutex_;
  std::vector<std::unique_ptr<fiber_record>> fibers_;  // owns every fiber record

  // Events posted to the driver: bit l = level l (max_levels <= 64).
  alignas(64) std::atomic<std::uint64_t> pending_nonempty_{0};
  std::atomic<std::uint64_t> pending_maybe_empty_{0};
  std::atomic<bool> driver_poked_{false};  // the policy changed: recompute the quantum deadline
  sleep_slot driver_slot_;
  std::atomic<std::uint64_t> blocked_waits_{0};  // waits that blocked a worker thread (no fiber stack)

  // Policy driver state, guarded by policy_mutex_.
  mutable checked_mutex policy_mutex_;
  std::unique_ptr<ext::policy> policy_;
  std::atomic<bool> roaming_{false};
  std::vector<unsigned> allotment_;
  std::vector<std::uint64_t> seen_work_ns_, seen_look_ns_;
  std::vector<ext::pool_stats> last_stats_;
  std::uint64_t decisions_ = 0;
  std::uint64_t quanta_ = 0;
  // The next quantum tick, or none while fewer than two levels have work.
  std::optional<std::chrono::steady_clock::time_point> next_quantum_;
  std::uint64_t nonempty_since_tick_ = 0;  // levels that became non-empty since the last tick
  std::chrono::steady_clock::time_point started_;
  std::ofstream trace_;
  std::thread driver_;
};

std::uint64_t now_ns() noexcept;

}  // namespace promptly::detail
