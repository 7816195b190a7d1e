// Task dependency graphs (scheduled as in Taskflow's executor, "An Efficient
// Work-Stealing Scheduler for Task Dependency Graph"): build a directed
// acyclic graph of tasks once, run it on a runtime as often as needed.
//
//   promptly::graph g("pipeline");
//   auto load  = g.emplace([&] { read_input(); }).name("load");
//   auto left  = g.emplace([&] { transform_a(); }).name("left");
//   auto right = g.emplace([&] { transform_b(); }).name("right");
//   auto save  = g.emplace([&] { write_output(); }).name("save");
//   load.precede(left, right);   // load runs before left and right
//   save.succeed(left, right);   // save runs after both
//   promptly::graph_run r = g.run(rt);   // returns at once
//   r.get();                             // waits; rethrows a task's exception
//
// Rules (docs/graphs.md has the full guide):
//  * A task runs only after every predecessor has finished; its
//    predecessors' writes are visible to it. Each run runs every task at
//    most once, and exactly once unless the run is stopped.
//  * Cycles are rejected when the graph is run: run() throws graph_cycle
//    naming the tasks of one cycle. A self-loop is rejected by precede().
//  * One run of a graph at a time: run() on a graph whose previous run has
//    not finished throws graph_busy, and so does any modification while it
//    runs. Different graphs run concurrently on one runtime without limit.
//    A graph may be run again (and modified) once its run has finished.
//  * Stopping. cancel() on the handle, or the first exception thrown by a
//    task, stops the run: from then on every task of the run that has not
//    started is skipped (it does not run, but still releases its
//    successors, so the run ends quickly); tasks already running finish.
//    A task that reads the stop flag after it was set never starts; this
//    covers every successor, direct or transitive, of the task that threw
//    or called cancel(). The handle lists the skipped tasks (not_run()).
//  * get() rethrows the first exception a task threw (later ones are
//    discarded), unchanged; the handle says which task threw it
//    (failed_task_id(), failed_task(), failed_task_name()). Otherwise get()
//    throws graph_cancelled if cancel() skipped at least one task;
//    otherwise returns. A cancel() that arrives when every
//    task has already started changes nothing.
//  * The graph's destructor waits for its run in progress. Destroying or
//    waiting for a graph from one of its own tasks deadlocks.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "promptly/detail/graph_core.hpp"
#include "promptly/future.hpp"
#include "promptly/this_task.hpp"

namespace promptly {

class runtime;
class graph;
class graph_run;

// The dependencies of a graph form a cycle. what() names the tasks of one
// cycle, e.g.  graph "g": the dependencies form a cycle: "a" -> "b" -> "a".
class graph_cycle : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// run() on a graph that is still running, or a modification of a running
// graph.
class graph_busy : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// What graph_run::get() throws when cancel() stopped the run before every
// task had started.
class graph_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A handle to one task of a graph: cheap to copy, valid while the graph
// lives (clear() invalidates it). Default-constructed handles are empty.
class graph_task {
 public:
  graph_task() noexcept = default;

  // This task runs before each of `others` (edges this -> other). Every
  // argument must belong to the same graph; a task cannot precede itself.
  template <std::same_as<graph_task>... T>
  graph_task& precede(const T&... others) {
    (link(*this, others), ...);
    return *this;
  }
  // This task runs after each of `others` (edges other -> this).
  template <std::same_as<graph_task>... T>
  graph_task& succeed(const T&... others) {
    (link(others, *this), ...);
    return *this;
  }

  graph_task& name(std::string n) {
    core().set_name(id_, std::move(n));
    return *this;
  }
  // The task's name; empty if it has none.
  [[nodiscard]] const std::string& name() const { return core().name_of(id_); }

  // Dense ids: the i-th emplaced task has id i.
  [[nodiscard]] std::size_t id() const noexcept { return id_; }
  [[nodiscard]] std::size_t num_successors() const {
    const detail::graph_successors* s = core().node(id_).succ;
    return s == nullptr ? 0 : s->count;
  }
  [[nodiscard]] std::size_t num_predecessors() const { return core().node(id_).num_preds; }
  [[nodiscard]] bool empty() const noexcept { return core_ == nullptr; }

  friend bool operator==(const graph_task&, const graph_task&) = default;

 private:
  friend class graph;
  friend class graph_run;
  graph_task(detail::graph_core* c, std::uint32_t id) noexcept : core_(c), id_(id) {}
  detail::graph_core& core() const {
    if (core_ == nullptr) throw std::invalid_argument("promptly::graph_task: empty task handle");
    return *core_;
  }
  static void link(const graph_task& from, const graph_task& to) {
    if (from.core_ == nullptr || to.core_ == nullptr)
      throw std::invalid_argument("promptly::graph_task::precede/succeed: empty task handle");
    if (from.core_ != to.core_)
      throw std::invalid_argument("promptly::graph_task::precede/succeed: the tasks belong to different graphs (" +
                                  from.core_->describe_graph() + " and " + to.core_->describe_graph() + ")");
    from.core_->add_edge(from.id_, to.id_);
  }

  detail::graph_core* core_ = nullptr;
  std::uint32_t id_ = 0;
};

// The handle of one run: its future, cancellation, and what did not run.
// Copyable; every copy refers to the same run. It may outlive the graph
// (then not_run() still reports ids, but their handles must not be used).
class graph_run {
 public:
  graph_run() noexcept = default;

  [[nodiscard]] bool valid() const noexcept { return rec_ != nullptr; }
  // True once the run has finished (get() will not wait).
  [[nodiscard]] bool is_ready() const noexcept { return rec_ != nullptr && rec_->done_future.is_ready(); }
  // Waits for the run to finish; never throws a task's exception.
  void wait() const { record().done_future.wait(); }
  // Waits, then rethrows the first exception a task threw, or throws
  // graph_cancelled if cancel() skipped tasks.
  void get() const { record().done_future.get(); }
  // The run's future: ready when the run has finished, with the outcome of
  // get(). Any number of copies; waiting on it from a task parks the task.
  [[nodiscard]] future<void> get_future() const { return record().done_future; }

  // Asks the run to stop: tasks running now finish, no other task of this
  // run starts. Any thread, any time; after the run finished it does nothing.
  void cancel() const noexcept {
    if (rec_ != nullptr) rec_->request_cancel();
  }
  // Waits; true if the run ended because cancel() skipped at least one task
  // (and no task threw).
  [[nodiscard]] bool cancelled() const { return finished().outcome == detail::graph_outcome::cancelled; }
  // Waits; true if a task threw.
  [[nodiscard]] bool failed() const { return finished().outcome == detail::graph_outcome::failed; }
  // Waits; the ids of the tasks that did not run, ascending. Empty unless
  // the run was stopped by cancel() or an exception.
  [[nodiscard]] const std::vector<std::uint32_t>& not_run_ids() const { return finished().not_run; }
  // Waits; handles to the tasks that did not run (valid while the graph
  // lives and has not been cleared).
  [[nodiscard]] std::vector<graph_task> not_run() const {
    const detail::graph_run_record& r = finished();
    std::vector<graph_task> out;
    out.reserve(r.not_run.size());
    for (std::uint32_t id : r.not_run) out.push_back(graph_task(r.graph, id));
    return out;
  }

  // Which task threw the exception get() rethrows (the first one, when
  // several threw). Each waits for the run to finish.
  //   failed_task_id():   its id; std::nullopt unless a task threw.
  //   failed_task():      a handle to it; empty unless a task threw (valid
  //                       while the graph lives and has not been cleared).
  //   failed_task_name(): its name as it was when the run ended; "" if the
  //                       task had none or no task threw.
  [[nodiscard]] std::optional<std::uint32_t> failed_task_id() const { return finished().failed_task; }
  [[nodiscard]] graph_task failed_task() const {
    const detail::graph_run_record& r = finished();
    return r.failed_task ? graph_task(r.graph, *r.failed_task) : graph_task();
  }
  [[nodiscard]] const std::string& failed_task_name() const { return finished().failed_task_name; }

 private:
  friend class graph;
  explicit graph_run(std::shared_ptr<detail::graph_run_record> r) noexcept : rec_(std::move(r)) {}
  detail::graph_run_record& record() const {
    if (rec_ == nullptr) throw future_empty("promptly::graph_run: the handle refers to no run");
    return *rec_;
  }
  const detail::graph_run_record& finished() const {
    detail::graph_run_record& r = record();
    r.done_future.wait();
    return r;
  }

  std::shared_ptr<detail::graph_run_record> rec_;
};

// A task dependency graph. Build it on one thread; run it with run().
// Movable, not copyable; a moved-from graph may only be assigned or destroyed.
class graph {
 public:
  explicit graph(std::string name = {}) : core_(std::make_unique<detail::graph_core>(std::move(name))) {}
  graph(graph&&) noexcept = default;
  // Waits for this graph's run in progress, then replaces it.
  graph& operator=(graph&&) noexcept = default;
  // Waits for the run in progress, then destroys the callables.
  ~graph() = default;

  // Adds a task that calls f() (as a non-const lvalue, so a mutable lambda
  // keeps its state across runs). f is stored in the graph, moved or copied
  // from the argument; it must return void.
  template <class F>
    requires std::invocable<std::decay_t<F>&> && std::is_void_v<std::invoke_result_t<std::decay_t<F>&>>
  graph_task emplace(F&& f) {
    return graph_task(core_.get(), core_->emplace(std::forward<F>(f)));
  }
  // Several tasks at once: auto [a, b, c] = g.emplace(fa, fb, fc);
  template <class... F>
    requires(sizeof...(F) > 1)
  auto emplace(F&&... fs) {
    return std::tuple{emplace(std::forward<F>(fs))...};
  }

  // The task with the given id (0 <= id < size()).
  [[nodiscard]] graph_task task(std::size_t id) const {
    if (id >= core_->size())
      throw std::out_of_range("promptly::graph::task: no task #" + std::to_string(id) + " in " +
                              core_->describe_graph() + " of " + std::to_string(core_->size()) + " tasks");
    return graph_task(core_.get(), static_cast<std::uint32_t>(id));
  }

  [[nodiscard]] std::size_t size() const noexcept { return core_->size(); }
  [[nodiscard]] bool empty() const noexcept { return core_->size() == 0; }
  [[nodiscard]] std::size_t num_edges() const noexcept { return core_->edge_count(); }
  [[nodiscard]] const std::string& name() const noexcept { return core_->name(); }
  void name(std::string n) { core_->rename(std::move(n)); }
  // Preallocates storage for `tasks` tasks.
  void reserve(std::size_t tasks) { core_->reserve(tasks); }
  // Removes every task (invalidating task handles). Throws graph_busy while running.
  void clear() { core_->clear(); }
  // True from run() until the run has finished.
  [[nodiscard]] bool running() const noexcept { return core_->running(); }

  // Starts a run on rt and returns at once. Its tasks run at the caller's
  // priority level (promptly::current_level(): 0 outside a runtime's
  // workers), like any work a task spawns. Throws graph_busy if the graph
  // is running, graph_cycle if it has a cycle, runtime_stopped if rt is
  // shutting down, pool_removed if the pool is being removed (called from
  // rt's tasks, it is admitted as async is: a task of the pool being
  // removed may still start runs there). The runtime's shutdown and
  // remove_pool wait for the run to finish.
  // [[nodiscard]]: the handle is the only way to learn that a task threw.
  [[nodiscard]] graph_run run(runtime& rt) { return run(rt, level{current_level()}); }
  // The same at priority level `at` (std::out_of_range if rt has no such level).
  [[nodiscard]] graph_run run(runtime& rt, level at);

 private:
  std::unique_ptr<detail::graph_core> core_;  // null only in a moved-from graph
};

}  // namespace promptly
