// Scratch storage for the sorts that move elements out of the range (detail/sort_impl.hpp,
// detail/key_prefix_sort.hpp).
//
// Buffers of at least sort_buffer_map_bytes are mapped from the kernel and unmapped when the
// sort returns. Through malloc, freeing a buffer this large raises glibc's mmap threshold (up to
// 32 MiB), so the next ones come from the arena of the thread that sorted and stay there: peak
// RSS then grew by one buffer per worker that ever sorted (10^6 strings at 2 workers: 253 MiB
// against 192 at 1, bench/results/algorithms/strings-key-prefix/README.md).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <memory>
#include <new>

namespace promptly::detail {

inline constexpr std::size_t sort_buffer_map_bytes = std::size_t{1} << 20;

// n elements of raw storage, destroyed (if constructed) and freed on every path; throws
// std::bad_alloc if it cannot be had.
template <class T>
class sort_buffer {
  static_assert(alignof(T) <= 4096, "a mapping is page-aligned");

 public:
  explicit sort_buffer(std::size_t n) : n_(n) {
    if (!mapped()) {
      p_ = std::allocator<T>().allocate(n);
      return;
    }
    void* p = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    p_ = static_cast<T*>(p);
  }
  ~sort_buffer() {
    if (constructed_) std::destroy(p_, p_ + n_);
    if (mapped())
      ::munmap(p_, n_ * sizeof(T));
    else
      std::allocator<T>().deallocate(p_, n_);
  }
  sort_buffer(const sort_buffer&) = delete;
  sort_buffer& operator=(const sort_buffer&) = delete;
  T* data() const noexcept { return p_; }
  void mark_constructed() noexcept { constructed_ = true; }

 private:
  bool mapped() const noexcept { return n_ >= sort_buffer_map_bytes / sizeof(T); }

  std::size_t n_;
  T* p_ = nullptr;
  bool constructed_ = false;
};

}  // namespace promptly::detail
