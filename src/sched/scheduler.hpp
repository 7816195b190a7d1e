// The scheduler: workers, pools (priority levels are pools 0..L-1; more come
// and go at run time), the notifier slots, and the policy side that turns
// pool events and quantum ticks into worker assignments. It owns the types
// below and keeps the mechanism's entry points; each type owns one concept
// and states its invariants at the top of its file (src/sched/README.md has
// the protocols):
//   scheduler.cpp        construction, worker threads, shutdown, the trace
//   fiber_cache.*        the fibers: owned, idle, spare
//   pool_table.*         the pool table: ids to type-stable records, drain notices
//   pools.cpp            creating and removing pools, admission, making work ready
//   scheduling_loop.*    worker_loop: the worker loop, the waiting side of the sleep protocol, moves
//   set_walk.hpp         walking a ranked set (shared with the simulator)
//   sleep_protocol.*     the sleep domains, their counters, waking a worker of one
//   pool_moves.*         a worker leaving and arriving at pools, its deques per pool
//   parking.cpp          waiting: parking fibers, blocking threads
//   event_board.*        the pool events the mechanism posts, and who is asked to decide them
//   policy_driver.*      the policy lock and thread: taking events, deciding, applying, quanta
//   kept_view.*          the driver's view of the pools, kept between decisions
//   decision.*           what a policy sees and does (ext::decision), resolved per core
//   preemption.*         standby threads for work waiting behind strands of other pools
//   runtime_stats.cpp    stats(), read by the policy driver
//
// Calls flow one way: submit -> ready -> run (pools.cpp, sleep_protocol,
// scheduling_loop.cpp) and event -> decision -> switch (event_board, then
// policy_driver, which writes the workers' assignment words; the workers
// switch at their strand boundaries and loop tops). The mechanism
// (submitters, wakers, workers) makes work ready and records pool events
// (an atomic bit and a futex wake, never a lock that a policy holds, an
// allocation or a policy call); only the policy driver calls the policy and
// writes assignments, on the policy thread or at a worker's loop top.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "event_board.hpp"
#include "fiber.hpp"
#include "fiber_cache.hpp"
#include "notifier.hpp"
#include "policy_driver.hpp"
#include "pool.hpp"
#include "pool_moves.hpp"
#include "pool_table.hpp"
#include "promptly/config.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/pool.hpp"
#include "promptly/stats.hpp"
#include "scheduling_loop.hpp"
#include "sleep_protocol.hpp"
#include "worker.hpp"

namespace promptly::detail {

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

  // ---- policy (the policy driver's entry points, policy_driver.hpp) ----
  void set_policy(const std::string& name) { driver_.set_policy(name); }
  void set_policy(std::unique_ptr<ext::policy> p) { driver_.set_policy(std::move(p)); }
  void set_fairness(std::vector<long long> weights) { driver_.set_fairness(std::move(weights)); }
  void set_core_limit(unsigned n) { driver_.set_core_limit(n); }
  unsigned core_limit() const noexcept { return driver_.core_limit(); }
  bool switches_when_out_of_work() const noexcept { return driver_.switches_when_out_of_work(); }
  std::string policy_name() const { return driver_.policy_name(); }
  runtime_stats stats() const {
    return driver_.stats(fibers_.count(), loop_.blocked_waits());
  }
  // One pool's statistics (pools.cpp); throws std::out_of_range naming an
  // unknown or removed pool.
  pool_stats stats_of(std::uint32_t id) const;

  // ---- used by the scheduling loop and parking (same library) ----
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
  // Parking failed: blocks the worker's thread until the event (worker_loop::block_worker).
  void block_worker(worker& w, publish_fn publish, void* event) { loop_.block_worker(w, publish, event); }

 private:
  friend worker_view* detail::switch_pool_at_boundary();
  void worker_main(worker& w);
  bool more_urgent_work_in_set(worker& w) noexcept { return loop_.more_urgent_work_in_set(w); }


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

  // The pool events the mechanism posts for the policy driver (the only part
  // of the policy side the make-ready paths touch), and the driver itself.
  event_board board_;
  policy_driver driver_;
  worker_loop loop_;  // the workers' loop, sleep and moves (scheduling_loop.hpp)

  // The event trace (event_trace.hpp): fixed at construction.
  bool tracing_ = false;
  std::string trace_path_;
  trace_ring external_trace_;  // threads that are no worker; guarded by external_trace_lock_
  std::atomic_flag external_trace_lock_;
  void trace_external(trace_kind kind, std::uint32_t pool, std::uint32_t arg, std::uint32_t arg2) noexcept;
  std::uint64_t trace_t0_ns_ = 0;
  void start_trace();
  void write_trace() noexcept;
};

}  // namespace promptly::detail
