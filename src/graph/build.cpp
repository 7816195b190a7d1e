// Building a graph: node slots, edges, names, clearing. The invariants are
// stated in promptly/detail/graph_core.hpp.
#include <cstring>
#include <stdexcept>
#include <string>

#include "promptly/graph.hpp"

namespace promptly::detail {

graph_core::~graph_core() {
  // A run in progress still uses the nodes: wait until it has finished
  // (wait() never throws the run's exception).
  if (last_done_.valid()) last_done_.wait();
}

void graph_core::check_idle(const char* operation) const {
  if (running_.load(std::memory_order_acquire))
    throw graph_busy(std::string("promptly::graph::") + operation + ": " + describe_graph() +
                     " is running; wait for its run to finish before modifying it");
}

graph_node* graph_core::prepare_slot() {
  check_idle("emplace");
  if (size_ == max_tasks)
    throw std::length_error("promptly::graph::emplace: " + describe_graph() + " already has the maximum of " +
                            std::to_string(max_tasks) + " tasks");
  if ((size_ & (chunk_nodes - 1)) == 0 && (size_ >> chunk_shift) == chunks_.size()) {
    chunk_owners_.reserve(chunk_owners_.size() + 1);
    chunks_.reserve(chunks_.size() + 1);
    auto* c = static_cast<graph_node*>(
        ::operator new(sizeof(graph_node) * chunk_nodes, std::align_val_t{alignof(graph_node)}));
    chunk_owners_.emplace_back(c);
    chunks_.push_back(c);
  }
  if ((size_ & 63) == 0 && (size_ >> 6) == has_pred_.size()) has_pred_.push_back(0);
  return &node(size_);
}

std::uint32_t graph_core::commit_slot() noexcept {
  ++sinks_;  // a new task has no successors yet
  prepared_ = false;
  return size_++;
}

void graph_core::add_edge(std::uint32_t from, std::uint32_t to) {
  check_idle("precede/succeed");
  if (from == to)
    throw graph_cycle("promptly::graph_task::precede: task " + describe(from) + " of " + describe_graph() +
                      " cannot precede itself (a self-loop is a cycle)");
  graph_node& a = node(from);
  graph_node& b = node(to);
  graph_successors* s = a.succ;
  if (s == nullptr) {
    s = static_cast<graph_successors*>(edge_lists_.allocate(graph_successors::bytes(1), alignof(graph_successors)));
    s->count = 0;
    s->capacity = 1;
    a.succ = s;
    --sinks_;
  } else if (s->count == s->capacity) {
    const std::uint32_t cap = s->capacity * 2;
    if (!edge_lists_.try_extend(s, graph_successors::bytes(s->capacity), graph_successors::bytes(cap))) {
      auto* bigger =
          static_cast<graph_successors*>(edge_lists_.allocate(graph_successors::bytes(cap), alignof(graph_successors)));
      bigger->count = s->count;
      std::memcpy(bigger->items(), s->items(), s->count * sizeof(graph_node*));
      s = bigger;
      a.succ = s;
    }
    s->capacity = cap;
  }
  s->items()[s->count++] = &b;
  ++b.num_preds;
  ++b.join;  // join == num_preds between runs
  has_pred_[to >> 6] |= std::uint64_t{1} << (to & 63);
  ++edges_;
  if (from > to) maybe_cyclic_ = true;
  prepared_ = false;
}

void graph_core::set_name(std::uint32_t id, std::string name) {
  check_idle("graph_task::name");
  if (names_.size() <= id) names_.resize(size_);
  names_[id] = std::move(name);
}

const std::string& graph_core::name_of(std::uint32_t id) const noexcept {
  static const std::string unnamed;
  return id < names_.size() ? names_[id] : unnamed;
}

std::string graph_core::describe(std::uint32_t id) const {
  const std::string& n = name_of(id);
  if (n.empty()) {
    std::string numbered(1, '#');
    numbered += std::to_string(id);
    return numbered;
  }
  std::string quoted;
  quoted.reserve(n.size() + 2);
  quoted.append(1, '"').append(n).append(1, '"');
  return quoted;
}

std::string graph_core::describe_graph() const {
  return name_.empty() ? std::string("an unnamed graph") : "graph \"" + name_ + '"';
}

void graph_core::rename(std::string name) {
  check_idle("name");
  name_ = std::move(name);
}

void graph_core::reserve(std::size_t tasks) {
  check_idle("reserve");
  const std::size_t chunks = (tasks + chunk_nodes - 1) / chunk_nodes;
  chunk_owners_.reserve(chunks);
  chunks_.reserve(chunks);
  has_pred_.reserve((tasks + 63) / 64);
}

void graph_core::clear() {
  check_idle("clear");
  callables_.clear();  // destroys the boxed callables; inline ones need no destructor
  edge_lists_.clear();
  chunks_.clear();
  chunk_owners_.clear();
  has_pred_.clear();
  names_.clear();
  sources_.clear();
  size_ = sinks_ = 0;
  edges_ = 0;
  maybe_cyclic_ = false;
  prepared_ = false;
}

}  // namespace promptly::detail
