// A bump allocator owned by one graph. It holds what a graph allocates per
// task besides the task record itself: callables too large to live inside
// their node, and successor lists. Everything is released at once by clear()
// (graph::clear, graph destruction), so building a graph of n tasks costs a
// handful of chunk allocations instead of n heap allocations, and destroying
// it costs the same handful of frees (plus the destructors of callables that
// have one).
//
// Invariants
//  * Only the thread that builds the graph allocates, and never while the
//    graph runs (graph_core rejects modifications during a run).
//  * A block stays at its address until clear(); nothing is ever moved.
//  * dtors_ lists exactly the live objects whose type is not trivially
//    destructible, newest first; clear() destroys them in that order.
//  * [cur_, end_) is the free tail of the newest chunk; the newest block
//    handed out ends at cur_ (what try_extend relies on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace promptly::detail {

class graph_arena {
 public:
  // Chunk size: small graphs pay one chunk, large ones amortise the
  // allocation over 4096 successor slots or hundreds of callables.
  static constexpr std::size_t chunk_bytes = 32 * 1024;

  graph_arena() = default;
  graph_arena(const graph_arena&) = delete;
  graph_arena& operator=(const graph_arena&) = delete;
  ~graph_arena() { clear(); }

  // A block of `bytes` aligned to `align` (a power of two).
  void* allocate(std::size_t bytes, std::size_t align) {
    auto p = (reinterpret_cast<std::uintptr_t>(cur_) + (align - 1)) & ~std::uintptr_t(align - 1);
    if (cur_ == nullptr || p + bytes > reinterpret_cast<std::uintptr_t>(end_)) [[unlikely]]
      return allocate_slow(bytes, align);
    cur_ = reinterpret_cast<std::byte*>(p + bytes);
    return reinterpret_cast<void*>(p);
  }

  // Grows the newest block, which starts at p and has old_bytes, to
  // new_bytes in place if it is the newest block and the chunk has room.
  bool try_extend(void* p, std::size_t old_bytes, std::size_t new_bytes) noexcept {
    auto* b = static_cast<std::byte*>(p);
    if (b + old_bytes != cur_ || new_bytes > static_cast<std::size_t>(end_ - b)) return false;
    cur_ = b + new_bytes;
    return true;
  }

  // Constructs an F in the arena; its destructor runs at clear().
  template <class F, class A>
  F* create(A&& arg) {
    dtor_record* d = nullptr;
    if constexpr (!std::is_trivially_destructible_v<F>)
      d = static_cast<dtor_record*>(allocate(sizeof(dtor_record), alignof(dtor_record)));
    F* obj = ::new (allocate(sizeof(F), alignof(F))) F(std::forward<A>(arg));
    if constexpr (!std::is_trivially_destructible_v<F>) {
      d->object = obj;
      d->destroy = [](void* o) noexcept { static_cast<F*>(o)->~F(); };
      d->next = dtors_;
      dtors_ = d;
    }
    return obj;
  }

  // Destroys the objects made by create() and frees every chunk.
  void clear() noexcept;

  std::size_t chunk_count() const noexcept { return chunks_.size(); }

 private:
  struct dtor_record {
    dtor_record* next;
    void (*destroy)(void*) noexcept;
    void* object;
  };
  struct chunk_deleter {
    void operator()(std::byte* p) const noexcept { ::operator delete(p); }
  };

  void* allocate_slow(std::size_t bytes, std::size_t align);

  std::byte* cur_ = nullptr;
  std::byte* end_ = nullptr;
  dtor_record* dtors_ = nullptr;
  std::vector<std::unique_ptr<std::byte, chunk_deleter>> chunks_;
};

}  // namespace promptly::detail
