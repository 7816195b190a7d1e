// graph_arena's slow paths: a new chunk, and releasing everything.
// See promptly/detail/graph_arena.hpp for the invariants.
#include "promptly/detail/graph_arena.hpp"

namespace promptly::detail {

void* graph_arena::allocate_slow(std::size_t bytes, std::size_t align) {
  // A request larger than a quarter chunk gets a chunk of its own, so that
  // one big callable does not waste the tail of a shared chunk; the current
  // chunk stays the one small blocks come from.
  const std::size_t need = bytes + align;  // room to align the start
  if (need > chunk_bytes / 4) {
    chunks_.emplace_back(static_cast<std::byte*>(::operator new(need)));
    auto p = (reinterpret_cast<std::uintptr_t>(chunks_.back().get()) + (align - 1)) & ~std::uintptr_t(align - 1);
    return reinterpret_cast<void*>(p);
  }
  chunks_.emplace_back(static_cast<std::byte*>(::operator new(chunk_bytes)));
  cur_ = chunks_.back().get();
  end_ = cur_ + chunk_bytes;
  return allocate(bytes, align);
}

void graph_arena::clear() noexcept {
  for (dtor_record* d = dtors_; d != nullptr;) {
    dtor_record* next = d->next;  // the record lives in the arena, not in the object
    d->destroy(d->object);
    d = next;
  }
  dtors_ = nullptr;
  chunks_.clear();
  cur_ = end_ = nullptr;
}

}  // namespace promptly::detail
