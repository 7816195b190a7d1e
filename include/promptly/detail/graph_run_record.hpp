// The shared state of one run of a graph: what the run's handle
// (promptly::graph_run) and the running tasks have in common. It is
// reference counted (std::shared_ptr) because the handle may outlive the
// graph, and the graph may be run again before the handle is dropped.
//
// Invariants
//  * stop becomes true at most once per run (cancel() or the first
//    exception) and never goes back. Every node reads it right before it
//    would start; a node that reads true is skipped.
//  * error and error_at are written only by the task that wins
//    error_claimed, before that task releases its successors; they are read
//    only by the finisher, which every task's completion happens-before
//    (src/graph/execute.cpp).
//  * not_run, outcome, failed_task and failed_task_name are written by the
//    finisher before `done` is completed and read by the handle only after
//    `done` is ready (the future's acquire orders them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "promptly/detail/task.hpp"
#include "promptly/future.hpp"
#include "promptly/promise.hpp"

namespace promptly::detail {

class graph_core;

enum class graph_outcome : std::uint8_t {
  running,
  completed,  // every task ran and none threw
  failed,     // a task threw; `error` holds the first exception
  cancelled,  // cancel() took effect: at least one task did not run
};

struct graph_run_record {
  graph_run_record(graph_core* g, std::size_t task_count) : graph(g), tasks(task_count), done_future(done.get_future()) {}

  // Any thread, any time (also after the run finished: then no effect).
  void request_cancel() noexcept {
    cancel_requested.store(true, std::memory_order_relaxed);
    // Seq-cst: a task that starts after this store in the run's
    // happens-before order (e.g. a successor of the cancelling task) sees it.
    stop.store(true, std::memory_order_seq_cst);
  }

  // The task `at` threw: keep the first exception and where it came from,
  // and stop the run.
  void record_error(std::exception_ptr e, const task* at) noexcept {
    if (!error_claimed.exchange(true, std::memory_order_acq_rel)) {
      error = std::move(e);
      error_at = at;
    }
    stop.store(true, std::memory_order_seq_cst);
  }

  std::atomic<bool> stop{false};
  std::atomic<bool> cancel_requested{false};
  std::atomic<bool> error_claimed{false};
  std::exception_ptr error;
  const task* error_at = nullptr;  // the node that threw `error`
  graph_outcome outcome = graph_outcome::running;
  std::vector<std::uint32_t> not_run;  // ids of the skipped tasks, ascending
  std::optional<std::uint32_t> failed_task;  // the id of error_at, if a task threw
  std::string failed_task_name;  // its name when the run ended ("" if unnamed)

  graph_core* graph;  // for handles to the skipped tasks; never dereferenced by the record
  std::size_t tasks;  // tasks in the graph when the run started
  promise<void> done;
  future<void> done_future;
};

}  // namespace promptly::detail
