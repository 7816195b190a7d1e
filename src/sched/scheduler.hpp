// The scheduler: workers, the injection queue, the notifier and the
// num_actives / num_thieves counters of seed 002 Sec. II-B; the scheduling
// loop and the sleep protocol are in scheduling_loop.cpp, waiting in
// parking.cpp. See README.md in this folder for the protocols.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fiber.hpp"
#include "injection_queue.hpp"
#include "notifier.hpp"
#include "promptly/config.hpp"
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
  bool owns(const worker_view* v) const noexcept { return v != nullptr && v->sched == this; }

  // Algorithm 1: push to the injection queue and wake a sleeper.
  void inject(task* t);
  void inject_batch(task* const* tasks, std::size_t count);
  // Shutdown: stop accepting, wait for accepted work, stop the workers.
  void shutdown();
  void admit();  // throws runtime_stopped once shutdown began

  void detached_started() noexcept { outstanding_.fetch_add(1, std::memory_order_relaxed); }
  void detached_finished() noexcept { outstanding_.fetch_sub(1, std::memory_order_acq_rel); }

  // --- used by the scheduling loop and parking (same library) ---
  void run_scheduling_loop();
  fiber_record& take_idle_fiber(worker& w);
  std::vector<std::unique_ptr<worker>>& workers() noexcept { return workers_; }

 private:
  void worker_main(worker& w);
  task* wait_for_task(worker& w);        // Algorithm 5
  task* explore_task(worker& w);         // Algorithm 4
  task* wait_never_sleeping(worker& w);  // the ABP-style baseline
  void become_active(worker& w) noexcept;
  void become_inactive(worker& w) noexcept;

  runtime_config cfg_;
  std::vector<std::unique_ptr<worker>> workers_;
  injection_queue injection_;
  notifier notifier_;
  alignas(64) std::atomic<int> num_actives_{0};
  alignas(64) std::atomic<int> num_thieves_{0};
  alignas(64) std::atomic<std::int64_t> outstanding_{0};  // accepted, unfinished detached tasks
  std::atomic<bool> accepting_{true};
  std::atomic<bool> stopping_{false};
  std::once_flag shutdown_once_;

  std::mutex fibers_mutex_;
  std::vector<std::unique_ptr<fiber_record>> fibers_;  // owns every fiber record
};

}  // namespace promptly::detail
