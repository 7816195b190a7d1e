// The inside of a promptly::graph: node storage, the dependency structure,
// names, and the state of the run in progress. The public classes in
// promptly/graph.hpp are thin handles to it. Building is here (inline where
// it is a template); validation is in src/graph/validate.cpp, execution in
// src/graph/execute.cpp, starting and finishing runs in src/graph/run.cpp.
//
// Invariants
//  * Nodes live in chunks of chunk_nodes records, allocated as the graph
//    grows and never moved; task id i is node(i). Ids are dense: 0..size-1.
//  * has_pred_ bit i  <=>  node(i).num_preds > 0.
//  * sinks_ == number of nodes with succ == nullptr.
//  * maybe_cyclic_ is false if every edge added so far goes from a lower to
//    a higher id; such a graph is acyclic (ids are a topological order) and
//    needs no cycle check.
//  * prepared_ is true iff sources_ and the cycle check reflect the current
//    structure; every modification clears it.
//  * running_ is true from begin_run() until the finisher has stopped
//    touching the graph. While it is true the structure is frozen: every
//    modifier throws graph_busy. run_, active_, sched_, level_ and
//    sinks_left_ belong to the run in progress.
//  * The graph may be destroyed as soon as running_ is false and the run's
//    future is ready; the destructor waits for that (last_done_).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "promptly/detail/graph_arena.hpp"
#include "promptly/detail/graph_node.hpp"
#include "promptly/detail/graph_run_record.hpp"
#include "promptly/detail/task.hpp"
#include "promptly/future.hpp"

namespace promptly::detail {

class scheduler;

class graph_core {
 public:
  // Nodes per chunk; must be a power of two. 512 nodes = 32 KiB per chunk.
  static constexpr std::uint32_t chunk_shift = 9;
  static constexpr std::uint32_t chunk_nodes = 1u << chunk_shift;
  // Ids are 32-bit; one value is kept free so that size() never overflows.
  static constexpr std::uint32_t max_tasks = 0xFFFFFFFEu;

  explicit graph_core(std::string name) : name_(std::move(name)) {}
  ~graph_core();
  graph_core(const graph_core&) = delete;
  graph_core& operator=(const graph_core&) = delete;

  // ---- building: the owner's thread, never while running ----

  template <class F>
  std::uint32_t emplace(F&& f) {
    using D = std::decay_t<F>;
    graph_node* n = prepare_slot();
    if constexpr (graph_node::fits_inline<D>) {
      ::new (static_cast<void*>(n)) graph_node(this, &graph_node::invoke_inline<D>);
      ::new (static_cast<void*>(n->storage)) D(std::forward<F>(f));
    } else {
      D* obj = callables_.create<D>(std::forward<F>(f));
      ::new (static_cast<void*>(n)) graph_node(this, &graph_node::invoke_boxed<D>);
      ::new (static_cast<void*>(n->storage)) D*(obj);
    }
    return commit_slot();
  }
  void add_edge(std::uint32_t from, std::uint32_t to);
  void set_name(std::uint32_t id, std::string name);
  void reserve(std::size_t tasks);
  void clear();
  void rename(std::string name);

  // ---- queries ----

  graph_node& node(std::uint32_t id) noexcept { return chunks_[id >> chunk_shift][id & (chunk_nodes - 1)]; }
  const graph_node& node(std::uint32_t id) const noexcept {
    return chunks_[id >> chunk_shift][id & (chunk_nodes - 1)];
  }
  std::uint32_t size() const noexcept { return size_; }
  std::size_t edge_count() const noexcept { return edges_; }
  const std::string& name() const noexcept { return name_; }
  const std::string& name_of(std::uint32_t id) const noexcept;
  // How messages refer to a task: its name in quotes, or "#id".
  std::string describe(std::uint32_t id) const;
  // How messages refer to the graph: graph "name", or "an unnamed graph".
  std::string describe_graph() const;
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }

  // ---- running (src/graph/run.cpp, execute.cpp) ----

  // Claims the graph for a run at priority level `level`: throws graph_busy
  // if it is running, graph_cycle if it has a cycle. Returns the run's record.
  std::shared_ptr<graph_run_record> begin_run(unsigned level);
  // Undoes begin_run when the run could not be started (runtime stopped).
  void abort_run() noexcept;
  // On a worker of scheduler s: counts the run as outstanding work of s and
  // pushes the sources to the injection queue of the run's level (Algorithm 1
  // of Taskflow's executor, "An Efficient Work-Stealing Scheduler for Task
  // Dependency Graph").
  void start(scheduler& s) noexcept;
  // Completes a run of an empty graph on the calling thread.
  void finish_empty_run() noexcept;

 private:
  friend void execute_graph_node(task* t);

  graph_node* prepare_slot();
  std::uint32_t commit_slot() noexcept;
  void check_idle(const char* operation) const;
  void prepare();             // sources and cycle check (validate.cpp)
  void check_acyclic();       // throws graph_cycle naming a task on a cycle
  std::uint32_t id_of(const graph_node* n) const;  // slow: error paths only
  void release_successors(graph_node& n);  // execute.cpp
  void finish_run() noexcept;  // by the task whose completion ends the run
  void collect_not_run(graph_run_record& r) noexcept;

  struct chunk_deleter {
    void operator()(graph_node* p) const noexcept { ::operator delete(p, std::align_val_t{alignof(graph_node)}); }
  };

  // ---- structure ----
  std::string name_;
  std::vector<std::unique_ptr<graph_node, chunk_deleter>> chunk_owners_;
  std::vector<graph_node*> chunks_;  // chunk_owners_[k].get(), without the indirection
  std::uint32_t size_ = 0;
  std::uint32_t sinks_ = 0;
  std::size_t edges_ = 0;
  std::vector<std::uint64_t> has_pred_;
  std::vector<std::string> names_;  // may be shorter than size_: the rest are unnamed
  graph_arena callables_;
  graph_arena edge_lists_;
  bool maybe_cyclic_ = false;
  bool prepared_ = false;
  std::vector<task*> sources_;  // valid while prepared_

  // ---- the run in progress ----
  std::atomic<bool> running_{false};
  graph_run_record* run_ = nullptr;
  std::shared_ptr<graph_run_record> active_;
  scheduler* sched_ = nullptr;
  unsigned level_ = 0;       // the run's priority level
  future<void> last_done_;  // the latest run's future (owner's thread only)
  // Sinks that have not finished; the one that brings it to 0 finishes the
  // run. On its own line: every sink writes it.
  alignas(64) std::atomic<std::uint32_t> sinks_left_{0};
};

}  // namespace promptly::detail
