// One task of a graph: the record the scheduler moves around (the "node" of
// Taskflow's executor, "An Efficient Work-Stealing Scheduler for Task
// Dependency Graph"), sized to one cache line.
//
// A node is a detail::task, so the very record that describes the task is
// what sits in the injection queue, in a deque or in a worker's
// continuation cache; running a graph allocates nothing per task.
//
// Invariants
//  * Nodes live in their graph's fixed-size chunks and never move; a
//    successor list holds node pointers.
//  * Between runs, join == num_preds. During a run, join counts the
//    predecessors that have not finished yet; the task whose decrement
//    brings it to 0 makes the node ready and restores join = num_preds at
//    once, so the next run finds it reset without a pass over the graph.
//    A node with num_preds == 1 never touches join: its one predecessor
//    makes it ready directly.
//  * join is accessed through std::atomic_ref during a run, and plainly
//    (by the building thread) only when no run is in progress.
//  * mark is 0 between runs. During a run it is set to `skipped` by the one
//    worker that dequeued the node and did not run it (the run was
//    stopped); the run's finisher collects and clears the marks. Cycle
//    detection borrows it as a DFS colour and clears it again.
//  * The callable lives in `storage` when it is small and trivially
//    destructible, otherwise in the graph's arena and `storage` holds a
//    pointer to it; `invoke` knows which.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <type_traits>

#include "promptly/detail/task.hpp"

namespace promptly::detail {

class graph_core;
struct graph_node;

// A successor list in the graph's arena: a header followed by `capacity`
// node pointers. Capacities are powers of two; a full list is extended in
// place when it is the arena's newest block, else copied to a list of twice
// the capacity (the old slots are abandoned to the arena).
struct graph_successors {
  std::uint32_t count;
  std::uint32_t capacity;
  graph_node** items() noexcept { return reinterpret_cast<graph_node**>(this + 1); }
  graph_node* const* items() const noexcept { return reinterpret_cast<graph_node* const*>(this + 1); }
  static constexpr std::size_t bytes(std::uint32_t capacity) noexcept {
    return sizeof(graph_successors) + capacity * sizeof(graph_node*);
  }
};
static_assert(sizeof(graph_successors) == sizeof(graph_node*), "items() must start pointer-aligned");

// The scheduler's entry point for every node (src/graph/execute.cpp).
void execute_graph_node(task* t);

struct alignas(64) graph_node final : task {
  using invoke_fn = void (*)(graph_node&);
  static constexpr std::size_t inline_bytes = 8;
  static constexpr std::uint8_t skipped = 1;

  // A callable is stored inline when it fits and needs no destructor.
  template <class F>
  static constexpr bool fits_inline = sizeof(F) <= inline_bytes && alignof(F) <= alignof(std::max_align_t) &&
                                      alignof(F) <= 8 && std::is_trivially_destructible_v<F>;

  graph_node(graph_core* g, invoke_fn fn) noexcept : task(&execute_graph_node), owner(g), invoke(fn) {}

  template <class F>
  static void invoke_inline(graph_node& n) {
    std::invoke(*std::launder(reinterpret_cast<F*>(n.storage)));
  }
  template <class F>
  static void invoke_boxed(graph_node& n) {
    std::invoke(**std::launder(reinterpret_cast<F**>(n.storage)));
  }

  std::uint32_t join = 0;
  std::uint32_t num_preds = 0;
  std::uint8_t mark = 0;
  graph_successors* succ = nullptr;  // null for a sink
  graph_core* owner;
  invoke_fn invoke;
  alignas(8) unsigned char storage[inline_bytes];
};

#if defined(__GNUC__)
// Itanium C++ ABI (GCC, Clang): join fills task's tail padding, and the
// whole record is one cache line, so neighbours' join counters, written by
// different workers, never share a line.
static_assert(sizeof(graph_node) == 64, "graph_node should be one cache line");
#endif

}  // namespace promptly::detail
