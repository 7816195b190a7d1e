// Starting and ending runs: claiming the graph, handing the sources to the
// runtime (Algorithm 1 of Taskflow's executor paper, "An Efficient
// Work-Stealing Scheduler for Task Dependency Graph"), and the cases that
// never reach a worker.
//
// How run() reaches the scheduler. The runtime does not expose its
// scheduler to code outside its workers, so run() starts a small starter
// task at the run's level; on a worker, the starter reads the worker's
// scheduler and injects all sources into that level's injection ("master")
// queue under one lock, then notifies (detail::inject_batch). It counts
// the run as outstanding work before it returns, so the runtime's shutdown
// and a remove_pool wait for the whole run. From outside the runtime's
// workers the starter is a submission (runtime::submit: runtime_stopped,
// pool_removed, std::out_of_range for a level the runtime does not have);
// from one of its tasks it is that task's async, admitted as the task's
// other work is: a task still running in a pool being removed holds the
// pool open, so its graph runs are admitted there (remove_pool waits for
// them), while a task of another pool is refused with pool_removed.
#include "promptly/graph.hpp"

#include "promptly/runtime.hpp"

namespace promptly {

graph_run graph::run(runtime& rt, level at) {
  std::shared_ptr<detail::graph_run_record> rec = core_->begin_run(at.value);
  if (core_->size() == 0) {
    core_->finish_empty_run();
    return graph_run(std::move(rec));
  }
  try {
    detail::graph_core* c = core_.get();
    auto starter = [c] { c->start(*detail::current_worker()->sched); };  // the run reports through rec
    if (rt.on_own_worker())
      (void)promptly::async(at, starter);
    else
      (void)rt.submit(at, starter);
  } catch (...) {
    core_->abort_run();
    throw;
  }
  return graph_run(std::move(rec));
}

}  // namespace promptly

namespace promptly::detail {

std::shared_ptr<graph_run_record> graph_core::begin_run(unsigned level) {
  // Acq_rel: acquires the previous finisher's release of running_, so the
  // previous run's writes to the graph are visible before we reuse it.
  if (running_.exchange(true, std::memory_order_acq_rel))
    throw graph_busy("promptly::graph::run: " + describe_graph() +
                     " is already running; a graph runs once at a time: wait for its run to finish "
                     "(graph_run::wait) or build a second graph");
  try {
    prepare();
    auto rec = std::make_shared<graph_run_record>(this, size_);
    last_done_ = rec->done_future;
    active_ = rec;
    run_ = rec.get();
    level_ = level;
    sinks_left_.store(sinks_, std::memory_order_relaxed);  // published by the starter's submission
    return rec;
  } catch (...) {
    running_.store(false, std::memory_order_release);
    throw;
  }
}

void graph_core::abort_run() noexcept {
  active_.reset();
  run_ = nullptr;
  running_.store(false, std::memory_order_release);
}

void graph_core::start(scheduler& s) noexcept {
  sched_ = &s;
  count_detached_started(s, level_);  // before the starter (itself counted) returns
  // The executor paper's Algorithm 1: all sources under one lock, then notify. After
  // this call the run may finish at any time: nothing of the graph is
  // touched any more.
  inject_batch(s, sources_.data(), sources_.size(), level_);
}

void graph_core::finish_empty_run() noexcept {
  std::shared_ptr<graph_run_record> rec = std::move(active_);
  run_ = nullptr;
  rec->outcome = graph_outcome::completed;
  running_.store(false, std::memory_order_release);
  rec->done.set_value();
}

}  // namespace promptly::detail
