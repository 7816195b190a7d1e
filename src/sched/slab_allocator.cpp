// Slow paths of the per-worker slab allocator; see the header for the invariants.
#include "promptly/detail/slab_allocator.hpp"

namespace promptly::detail {

slab_allocator::free_node* slab_allocator::refill(std::uint32_t c) {
  // Prefer blocks that other threads gave back: take the whole remote list.
  free_node* n = remote_[c].exchange(nullptr, std::memory_order_acquire);
  if (n != nullptr) return n;
  const std::size_t block = class_bytes[c];
  chunks_.push_back(std::make_unique<std::byte[]>(chunk_bytes));
  std::byte* base = chunks_.back().get();
  free_node* head = nullptr;
  for (std::size_t i = chunk_bytes / block; i-- > 0;) {
    auto* f = reinterpret_cast<free_node*>(base + i * block);
    f->next = head;
    head = f;
  }
  return head;
}

void slab_allocator::free_remote(free_node* n, std::uint32_t c) noexcept {
  if (retired_.load(std::memory_order_acquire)) {
    // Orphaned slab: nobody allocates any more; count down to deletion.
    if (remote_frees_.fetch_add(1, std::memory_order_acq_rel) == -1) delete this;
    return;
  }
  free_node* head = remote_[c].load(std::memory_order_relaxed);
  do {
    n->next = head;
    // Release: the block's last contents are written before it is reused.
  } while (!remote_[c].compare_exchange_weak(head, n, std::memory_order_release, std::memory_order_relaxed));
  // A free that races with retire() below may be counted either before or
  // after the bias; both orders give the same final sum.
  if (remote_frees_.fetch_add(1, std::memory_order_acq_rel) == -1) delete this;
}

void slab_allocator::retire(std::unique_ptr<slab_allocator> slab) noexcept {
  slab_allocator* s = slab.release();
  s->retired_.store(true, std::memory_order_release);
  // Outstanding blocks = owner's net allocations - frees done remotely.
  const std::int64_t outstanding_bias = s->live_local_;
  if (s->remote_frees_.fetch_sub(outstanding_bias, std::memory_order_acq_rel) == outstanding_bias) delete s;
}

}  // namespace promptly::detail
