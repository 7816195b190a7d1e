// promptly::runtime: owns the worker threads and everything they share.
//
// Lifetime (RAII): the constructor starts the workers; the destructor (or an
// explicit shutdown()) stops accepting submissions, waits until every task
// submitted so far has finished, including tasks those tasks started with
// async() and never joined, then stops the workers. A submission that
// arrives after shutdown began throws promptly::runtime_stopped; nothing
// accepted is ever dropped. Destroying a runtime from one of its own tasks
// is a programming error and terminates the process with a message.
#pragma once

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <string>

#include "promptly/config.hpp"
#include "promptly/future.hpp"
#include "promptly/stats.hpp"
#include "promptly/typed/inversion_detector.hpp"  // runtime::inversions()

namespace promptly {

namespace detail {
class scheduler;
// Counts a submission from outside as outstanding work, or throws
// runtime_stopped if the runtime is shutting down.
void admit_external(scheduler& s);
}  // namespace detail

class runtime {
 public:
  explicit runtime(runtime_config cfg = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // Submits f from any thread and returns its future. Throws
  // runtime_stopped after shutdown began.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  auto submit(F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
    return submit(level{0}, std::forward<F>(f));
  }

  // Submits f to run at level `at` (throws std::out_of_range if the runtime
  // has no such level).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  auto submit(level at, F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
    using T = std::invoke_result_t<std::decay_t<F>&>;
    detail::scheduler& s = *sched_;
    detail::check_level(s, at.value);
    detail::admit_external(s);
    detail::future_state<T>* state;
    try {
      auto* a = detail::new_async_task<T>(nullptr, s, std::forward<F>(f));
      a->level = at.value;
      state = a;
      detail::schedule_ready(s, a);
    } catch (...) {
      detail::count_detached_finished(s);
      throw;
    }
    return future<T>(state);
  }

  // Runs f on a worker and returns its result (or rethrows its exception),
  // blocking the calling thread. Called from a task of this runtime, it
  // simply calls f.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  auto run(F&& f) -> std::invoke_result_t<std::decay_t<F>&> {
    if (on_own_worker()) return std::invoke(f);
    return submit(std::forward<F>(f)).get_consuming();
  }

  // Runs f at level `at`; from a task of this runtime it runs f as a task
  // of that level and waits for it.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  auto run(level at, F&& f) -> std::invoke_result_t<std::decay_t<F>&> {
    if (on_own_worker()) return promptly::async(at, std::forward<F>(f)).get_consuming();
    return submit(at, std::forward<F>(f)).get_consuming();
  }

  // Switches the policy by name ("oblivious", "prompt", "aps", "fair")
  // while the runtime runs. Throws std::invalid_argument for an unknown name.
  void set_policy(const std::string& name);
  // Installs a policy object (the extension tier, promptly/ext/policy.hpp):
  // the runtime calls it on its policy thread, on pool events and, if it
  // has a quantum, every quantum. Throws std::invalid_argument for null.
  void set_policy(std::unique_ptr<ext::policy> policy);
  std::string policy() const;

  // Installs a fairness criterion (installDist of "Fairness in Responsive
  // Parallelism", ICFP 2019): one integer weight per level, 0 = most urgent; levels past the end weigh 0. Takes
  // effect at once if the policy is "fair" (a new round starts and the
  // accounting in stats() restarts), else when "fair" is selected. Throws
  // std::invalid_argument for a negative weight, all weights zero, or more
  // weights than levels; the previous criterion then stays. docs/fairness.md.
  void set_fairness(std::vector<long long> weights);

  // Per-level statistics, readable at any time.
  runtime_stats stats() const;

  // Stops accepting work and waits for all accepted work; idempotent.
  void shutdown();

  unsigned workers() const noexcept;
  const runtime_config& config() const noexcept;

 private:
  bool on_own_worker() const noexcept;
  std::unique_ptr<detail::scheduler> sched_;

  // ---- run-time priority-inversion detector (docs/typed-priorities.md) ----
 public:
  // Touches of futures of less urgent levels seen so far; `enabled` is false
  // (and nothing is counted) unless runtime_config::detect_inversions.
  inversion_stats inversions() const { return detector_ ? detector_->snapshot() : inversion_stats{}; }

 private:
  // Declared after sched_, so it is built from the running scheduler's
  // configuration, and destroyed first, after shutdown() finished every task.
  std::unique_ptr<detail::inversion_detector> detector_ =
      detail::inversion_detector::attach(config().detect_inversions, sched_.get());
  // ---- end run-time priority-inversion detector ----
};

}  // namespace promptly
