// Running the nodes of a graph: Taskflow's executor paper ("An Efficient
// Work-Stealing Scheduler for Task Dependency Graph") Sec. II-A, the task side of
// Algorithm 3. "When a worker completes a task, it automatically decrements
// the dependency of successive tasks and pushes new tasks to its queue
// whenever dependency is met. Each worker keeps one local cache of task for
// continuation." The scheduling loop (src/sched/scheduling_loop.cpp) runs
// the cached task right after this one returns, without touching the deque.
//
// When is a run over? The run is over when every sink has finished: every
// task reaches some sink, and a sink starts only after all of its
// predecessors finished. The task whose decrement of sinks_left_ reaches 0
// finishes the run (completes the future). Counting sinks instead of all
// tasks keeps one shared read-modify-write off every inner task.
//
// Lemma (no access after the end). When sinks_left_ reaches 0, no worker
// will touch the graph again, so its owner may destroy it at once. Proof: a
// task X still inside release_successors has either (a) a successor it has
// not decremented yet, which therefore has not started, or (b) a ready
// successor it holds unpublished in `keep`, which has not started either;
// in both cases some sink below it has not finished. After its last
// decrement X only touches its worker (deque, continuation cache) and
// locals: the loop below reads nothing of the graph once the last
// fetch_sub has returned, and the last sink's fetch_sub on sinks_left_ is
// likewise its last access. Hence "all sinks finished" implies "no task is
// inside the graph's memory".
//
// Memory order. A successor with several predecessors becomes ready by an
// acq_rel fetch_sub: the read-modify-writes on its join counter form a
// release sequence, so every predecessor's writes happen-before the
// successor runs. A successor with one predecessor is handed over through
// the deque (release push, acquire steal) or the same worker's cache.
// sinks_left_'s acq_rel decrements likewise make every task's writes
// (its `mark`, the recorded exception) visible to the finisher.
#include <atomic>

#include "promptly/graph.hpp"

namespace promptly::detail {

void execute_graph_node(task* t) {
  graph_node& n = *static_cast<graph_node*>(t);
  graph_core& g = *n.owner;
  graph_run_record& r = *g.run_;
  // The stop check: relaxed suffices for its guarantee. A task that
  // happens-after cancel()'s or record_error()'s store (every successor of
  // the task that cancelled or threw) reads true by coherence.
  if (!r.stop.load(std::memory_order_relaxed)) [[likely]] {
    try {
      n.invoke(n);
    } catch (...) {
      r.record_error(std::current_exception(), &n);
    }
  } else {
    n.mark = graph_node::skipped;
  }
  g.release_successors(n);
}

void graph_core::release_successors(graph_node& n) {
  graph_successors* const list = n.succ;
  if (list == nullptr) {  // a sink
    if (sinks_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) finish_run();
    return;
  }
  // Re-read: the callable may have parked and resumed on another worker.
  worker_view& w = *reload_current_worker();
  // Work keeps the level it was created at: every node of a run runs at
  // the run's level, whatever level the worker serves when it releases
  // them (it serves n's level, unless a move is under way).
  const unsigned level = n.pool;
  const bool local = w.pool == level;
  graph_node* const* it = list->items();
  graph_node* const* const end = it + list->count;
  // The successors' lines are usually cold, and the locked decrements below
  // would take their misses one at a time: request them all first.
  for (graph_node* const* p = it; p != end; ++p) __builtin_prefetch(*p, 1);
  graph_node* keep = nullptr;  // the first ready successor: the continuation
  do {
    graph_node* m = *it++;
    if (m->num_preds != 1) {
      std::atomic_ref<std::uint32_t> join(m->join);
      if (join.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      join.store(m->num_preds, std::memory_order_relaxed);  // reset for the next run
    }
    m->pool = level;
    if (keep == nullptr && local)
      keep = m;
    else if (local)
      w.deque->push(m);  // stealable; safe to publish while `keep` is held (lemma above)
    else
      make_ready(*w.sched, &w, m, level);
  } while (it != end);
  if (keep == nullptr) return;
  // The executor paper's Algorithm 3, lines 7-8: the cached task runs next on this
  // worker. The cache holds one task; if it is taken, the deque gets it.
  // The scheduling loop puts it back on this level's deque if the worker
  // leaves the level before running it.
  if (w.continuation == nullptr)
    w.continuation = keep;
  else
    w.deque->push(keep);
}

void graph_core::collect_not_run(graph_run_record& r) noexcept {
  for (std::uint32_t i = 0; i < size_; ++i) {
    graph_node& n = node(i);
    if (n.mark == graph_node::skipped) {
      r.not_run.push_back(i);
      n.mark = 0;
    }
  }
}

void graph_core::finish_run() noexcept {
  graph_run_record& r = *run_;
  if (r.stop.load(std::memory_order_acquire)) collect_not_run(r);
  std::exception_ptr outcome_error;
  if (r.error) {
    r.outcome = graph_outcome::failed;
    outcome_error = r.error;
    const std::uint32_t id = id_of(static_cast<const graph_node*>(r.error_at));
    r.failed_task = id;
    try {
      r.failed_task_name = name_of(id);
    } catch (...) {  // no memory for a copy of the name: the id still says which task
    }
  } else if (!r.not_run.empty()) {
    r.outcome = graph_outcome::cancelled;
    outcome_error = std::make_exception_ptr(graph_cancelled(
        "promptly::graph_run: the run of " + describe_graph() + " was cancelled; " +
        std::to_string(r.not_run.size()) + " of " + std::to_string(r.tasks) +
        " tasks did not run (graph_run::not_run lists them)"));
  } else {
    r.outcome = graph_outcome::completed;
  }
  scheduler& s = *sched_;
  const unsigned pool = level_;
  std::shared_ptr<graph_run_record> rec = std::move(active_);
  run_ = nullptr;
  running_.store(false, std::memory_order_release);
  // From here on the graph may be modified, run again or destroyed by its
  // owner: only `rec` and `s` are used.
  if (outcome_error)
    rec->done.set_exception(std::move(outcome_error));
  else
    rec->done.set_value();
  rec.reset();
  count_detached_finished(s, pool);  // the runtime may shut down after this
}

}  // namespace promptly::detail
