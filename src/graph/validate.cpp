// Checking a graph before a run: its sources (the tasks Algorithm 1 of
// Taskflow's executor paper injects) and the absence of cycles.
//
// The cycle check runs only when some edge goes from a higher to a lower id
// (graph_core::maybe_cyclic_): when every edge goes "forward", the ids are a
// topological order and no cycle is possible. Graphs built in dependency
// order (the common case, and every benchmark of the executor paper's Sec. III-A) are
// therefore never traversed before a run. Otherwise an iterative
// three-colour depth-first search, O(tasks + edges), finds a back edge; the
// tasks on the DFS stack from its target to the top are a cycle, which the
// error names. Results are cached until the next modification.
#include <bit>
#include <string>
#include <vector>

#include "promptly/graph.hpp"

namespace promptly::detail {

void graph_core::prepare() {
  if (prepared_) return;
  sources_.clear();
  for (std::size_t w = 0; w < has_pred_.size(); ++w) {
    std::uint64_t without_pred = ~has_pred_[w];
    const std::size_t valid = size_ - w * 64;  // bits of this word that are tasks
    if (valid < 64) without_pred &= (std::uint64_t{1} << valid) - 1;
    while (without_pred != 0) {
      const auto id = static_cast<std::uint32_t>(w * 64 + std::countr_zero(without_pred));
      sources_.push_back(&node(id));
      without_pred &= without_pred - 1;
    }
  }
  if (maybe_cyclic_) check_acyclic();
  prepared_ = true;
}

std::uint32_t graph_core::id_of(const graph_node* n) const {
  for (std::size_t k = 0; k < chunks_.size(); ++k)
    if (n >= chunks_[k] && n < chunks_[k] + chunk_nodes)
      return static_cast<std::uint32_t>(k * chunk_nodes + static_cast<std::size_t>(n - chunks_[k]));
  return max_tasks;  // not a node of this graph: cannot happen
}

void graph_core::check_acyclic() {
  // node.mark as DFS colour: 0 = unvisited, grey = on the stack, black = done.
  constexpr std::uint8_t grey = 1, black = 2;
  struct frame {
    graph_node* n;
    std::uint32_t next;  // index of the next successor to visit
  };
  std::vector<frame> stack;
  std::size_t cycle_from = 0;  // stack index of the back edge's target
  bool found = false;
  for (std::uint32_t i = 0; i < size_ && !found; ++i) {
    graph_node* root = &node(i);
    if (root->mark != 0) continue;
    root->mark = grey;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      frame& f = stack.back();
      if (f.n->succ != nullptr && f.next < f.n->succ->count) {
        graph_node* m = f.n->succ->items()[f.next++];
        if (m->mark == 0) {
          m->mark = grey;
          stack.push_back({m, 0});  // invalidates f; not used again this iteration
        } else if (m->mark == grey) {
          found = true;
          while (stack[cycle_from].n != m) ++cycle_from;
          break;
        }
      } else {
        f.n->mark = black;
        stack.pop_back();
      }
    }
  }
  std::string path;
  if (found) {
    // Name the tasks of the cycle; very long cycles are abbreviated.
    constexpr std::size_t shown = 9;
    const std::size_t len = stack.size() - cycle_from;
    for (std::size_t k = 0; k < len && k < shown; ++k) path += describe(id_of(stack[cycle_from + k].n)) + " -> ";
    if (len > shown) path += "... (" + std::to_string(len - shown) + " more tasks) -> ";
    path += describe(id_of(stack[cycle_from].n));
  }
  for (std::uint32_t i = 0; i < size_; ++i) node(i).mark = 0;  // marks are 0 between runs
  if (found)
    throw graph_cycle("promptly::graph::run: " + describe_graph() + ": the dependencies form a cycle: " + path +
                      "; a task graph must be acyclic");
}

}  // namespace promptly::detail
