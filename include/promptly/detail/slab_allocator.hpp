// Per-worker slab allocator for task records and future states.
//
// Each worker owns one slab_allocator. Allocation is from the owner's local
// free list of the size class (no atomic, no global heap in steady state).
// A block freed by the owner goes back to the local list; a block freed by
// any other thread is pushed on the owner's lock-free remote list, which the
// owner drains when its local list runs dry (the scheme of mimalloc and
// Go's mcache). Requests larger than the biggest class, or made outside any
// worker, go to the global heap; the block header says which.
//
// Invariants
//  * local_[c] is touched only by the owner thread.
//  * A block's header names its slab; a slab outlives its blocks: when the
//    runtime shuts down with blocks still referenced (a future handle kept
//    by the user), the slab is orphaned and the last free deletes it
//    (see retire()).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace promptly::detail {

class slab_allocator {
 public:
  static constexpr std::size_t header_bytes = 16;
  static constexpr std::array<std::size_t, 4> class_bytes{64, 128, 256, 512};  // block sizes incl. header
  static constexpr std::size_t chunk_bytes = 64 * 1024;

  slab_allocator() noexcept { live_slabs_.fetch_add(1, std::memory_order_relaxed); }
  ~slab_allocator() { live_slabs_.fetch_sub(1, std::memory_order_relaxed); }
  slab_allocator(const slab_allocator&) = delete;
  slab_allocator& operator=(const slab_allocator&) = delete;

  // Owner thread only (or any thread when `slab` is null: heap fallback).
  static void* allocate(slab_allocator* slab, std::size_t bytes) {
    const std::size_t need = bytes + header_bytes;
    if (slab != nullptr) {
      for (std::uint32_t c = 0; c < class_bytes.size(); ++c)
        if (need <= class_bytes[c]) return slab->allocate_class(c);
    }
    auto* h = static_cast<header*>(::operator new(need));
    h->owner = nullptr;
    h->size_class = 0;
    return reinterpret_cast<std::byte*>(h) + header_bytes;
  }

  // Any thread. `current` is the calling thread's own slab (null outside workers).
  static void deallocate(void* p, slab_allocator* current) noexcept {
    auto* h = reinterpret_cast<header*>(static_cast<std::byte*>(p) - header_bytes);
    slab_allocator* owner = h->owner;
    if (owner == nullptr) {
      ::operator delete(h);
      return;
    }
    auto* n = reinterpret_cast<free_node*>(h);
    if (owner == current) {
      n->next = owner->local_[h->size_class];
      owner->local_[h->size_class] = n;
      --owner->live_local_;
      return;
    }
    owner->free_remote(n, h->size_class);
  }

  // Called once by the owner when its worker stops. Frees the slab now if no
  // block is outstanding, otherwise leaves it to the last remote free.
  static void retire(std::unique_ptr<slab_allocator> slab) noexcept;

  // Slabs alive in the process (for tests of the orphaning protocol).
  static long live_slabs() noexcept { return live_slabs_.load(std::memory_order_relaxed); }

 private:
  struct header {
    slab_allocator* owner;
    std::uint32_t size_class;
  };
  struct free_node {
    free_node* next;
  };
  static_assert(sizeof(header) <= header_bytes);

  void* allocate_class(std::uint32_t c) {
    free_node* n = local_[c];
    if (n == nullptr) [[unlikely]] n = refill(c);
    local_[c] = n->next;
    ++live_local_;
    auto* h = reinterpret_cast<header*>(n);
    h->owner = this;
    h->size_class = c;
    return reinterpret_cast<std::byte*>(h) + header_bytes;
  }
  free_node* refill(std::uint32_t c);
  void free_remote(free_node* n, std::uint32_t c) noexcept;

  std::array<free_node*, class_bytes.size()> local_{};
  std::int64_t live_local_ = 0;  // allocated by owner minus freed by owner (owner only)
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  alignas(64) std::array<std::atomic<free_node*>, class_bytes.size()> remote_{};
  // Counts remote frees; after retire() it is biased by -outstanding so that
  // the free that brings it to zero deletes the orphaned slab.
  std::atomic<std::int64_t> remote_frees_{0};
  std::atomic<bool> retired_{false};
  static inline std::atomic<long> live_slabs_{0};
};

}  // namespace promptly::detail
