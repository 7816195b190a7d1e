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
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "promptly/config.hpp"
#include "promptly/future.hpp"
#include "promptly/pool.hpp"
#include "promptly/stats.hpp"

namespace promptly {

namespace ext {
class policy;
}
class graph;
namespace detail {
class scheduler;
class inversion_detector;
}  // namespace detail

class runtime {
 public:
  explicit runtime(runtime_config cfg = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // Submits f from any thread to run at level 0 and returns its future.
  // Throws runtime_stopped after shutdown began.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] auto submit(F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
    return submit(pool{0}, std::forward<F>(f));
  }

  // Submits f to run in pool `at` (a level converts: rt.submit(level{2}, f)).
  // Throws std::out_of_range if the runtime has no such pool, pool_removed
  // if it is being removed, runtime_stopped after shutdown began.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] auto submit(pool at, F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
    using T = std::invoke_result_t<std::decay_t<F>&>;
    return future<T>(
        detail::start_async<T>(*sched_, detail::current_worker(), at.id, detail::admission::from_outside, std::forward<F>(f)));
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

  // Runs f in pool `at` (or at a level); from a task of this runtime it runs
  // f as a task of that pool and waits for it.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  auto run(pool at, F&& f) -> std::invoke_result_t<std::decay_t<F>&> {
    if (on_own_worker()) return promptly::async(at, std::forward<F>(f)).get_consuming();
    return submit(at, std::forward<F>(f)).get_consuming();
  }

  // Switches the policy by name ("oblivious", "prompt", "aps", "fair", or a
  // job policy: "equi", "drep", "drep-steal-boundary", "asteal", "elastic";
  // docs/job-policies.md) while the runtime runs. Throws std::invalid_argument for an unknown name.
  void set_policy(const std::string& name);
  // Installs a policy object (the extension tier, promptly/ext/policy.hpp,
  // docs/policies.md): the runtime calls it on its policy thread, on pool
  // events and, if it sets a quantum, every quantum. Throws
  // std::invalid_argument for null, and whatever the policy's first
  // decision throws (the previous policy then stays).
  void set_policy(std::unique_ptr<ext::policy> policy);
  std::string policy() const;

  // Installs a fairness criterion (installDist of "Fairness in Responsive
  // Parallelism", ICFP 2019): one integer weight per level, 0 = most urgent; levels past the end weigh 0. Takes
  // effect at once if the policy is "fair" (a new round starts and the
  // accounting in stats() restarts), else when "fair" is selected. Throws
  // std::invalid_argument for a negative weight, all weights zero, or more
  // weights than levels; the previous criterion then stays. docs/fairness.md.
  void set_fairness(std::vector<long long> weights);

  // Creates a pool (promptly/pool.hpp) while the runtime runs; the policy
  // hears of it at once. Throws std::invalid_argument for a bad option,
  // std::length_error when 4096 pools (levels included) exist,
  // runtime_stopped after shutdown began.
  [[nodiscard]] pool create_pool(pool_options opts = {});
  // Closes the pool to new work (submissions to it throw pool_removed),
  // waits until every task submitted to it (submit, async, graph runs) has
  // finished (parking if called from a task) and it holds no work at all
  // (children other pools' tasks spawned into it included), then removes
  // it; its id may be given to a later create_pool. Throws
  // std::out_of_range for an unknown or already removed pool,
  // std::invalid_argument for a level, std::logic_error when called from a
  // task of the pool itself (it would wait for itself).
  void remove_pool(pool p);
  // Calls fn once, at the first moment from now on at which pool p is
  // drained: every task submitted to it (submit, async, graph runs) has
  // finished and no worker runs in it. A job server uses it to remove a
  // job's pool as soon as the job's last worker has left, rather than wait
  // for that worker inside remove_pool. fn runs on the thread that drained
  // the pool (a worker that just left it, or a thread whose submission was
  // refused), or on the caller before on_drained returns if p is drained
  // already, or in remove_pool or shutdown(), which drain the pool too.
  // Like Go's context.AfterFunc, nothing waits for a running notice: one
  // that another thread has begun may still be running when remove_pool(p)
  // returns, so fn must own what it uses (capture by value or shared_ptr)
  // or synchronise with its owner itself. (Waiting would cost the common
  // use, a notice that wakes the remover, a futex round trip whenever the
  // remover wakes on the notice's core.) No notice is left registered
  // once remove_pool(p) returns, and none runs for a later pool with p's
  // id. fn must be short, must not throw (the process terminates) and must
  // not call into this runtime: on a worker it runs inside the scheduling
  // loop.
  // A drained pool stays live and may take work again; register again to
  // hear of the next time. May be called from a task, of p too. Throws
  // std::invalid_argument for an empty fn, std::out_of_range for an unknown
  // or removed pool.
  void on_drained(pool p, std::function<void()> fn);
  // Tells the policy that pool p asks for more cores (AMCilk's
  // request for cores; the shipped policies ignore it, job policies use it).
  void request_cores(pool p);
  // Occupancy control (AMCilk, "Multiprogramming with work stealing",
  // Sec. 4.2): from now on the runtime uses at most n of its workers
  // (workers n.. sleep; the policy decides over workers 0..n-1 and is told
  // `installed` again); 0 = all of them. Throws std::invalid_argument if
  // n > workers(). Tasks running on a worker that loses its core finish
  // their strand, then the worker parks them for the others.
  void set_core_limit(unsigned n);
  [[nodiscard]] unsigned core_limit() const noexcept;  // 0 = no limit
  // Pools alive now, levels included.
  std::size_t pool_count() const noexcept;

  // Statistics per level, per pool, per worker; readable at any time.
  // Costs O(pools x workers + samples) and holds the policy's lock meanwhile: for
  // monitoring, not for a call per task or job.
  runtime_stats stats() const;
  // One pool's (or level's) entry of stats(), without the walk over every
  // pool or the percentiles: what a job server reads when each job ends. Throws std::out_of_range for an
  // unknown or removed pool.
  pool_stats stats(pool p) const;

  // Stops accepting work and waits for all accepted work; idempotent.
  void shutdown();

  unsigned workers() const noexcept;
  const runtime_config& config() const noexcept;

 private:
  friend class graph;  // graph::run starts a task's run like the task's other work (on_own_worker)
  bool on_own_worker() const noexcept;
  std::unique_ptr<detail::scheduler> sched_;

  // Declared after sched_, so it is built from the running scheduler's
  // configuration, and destroyed first, after shutdown() finished every task.
  std::unique_ptr<detail::inversion_detector> detector_;

 public:
  // Touches of futures of less urgent levels seen so far (the run-time
  // priority-inversion detector, docs/typed-priorities.md); `enabled` is
  // false (and nothing is counted) unless runtime_config::detect_inversions.
  inversion_stats inversions() const;
};

}  // namespace promptly
