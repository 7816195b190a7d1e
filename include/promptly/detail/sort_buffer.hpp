// Scratch storage for the sorts that move elements out of the range (detail/sort_impl.hpp,
// detail/key_prefix_sort.hpp).
#pragma once

#include <cstddef>
#include <memory>

namespace promptly::detail {

// n elements of raw storage, destroyed (if constructed) and freed on every path.
template <class T>
class sort_buffer {
 public:
  explicit sort_buffer(std::size_t n) : n_(n), p_(std::allocator<T>().allocate(n)) {}
  ~sort_buffer() {
    if (constructed_) std::destroy(p_, p_ + n_);
    std::allocator<T>().deallocate(p_, n_);
  }
  sort_buffer(const sort_buffer&) = delete;
  sort_buffer& operator=(const sort_buffer&) = delete;
  T* data() const noexcept { return p_; }
  void mark_constructed() noexcept { constructed_ = true; }

 private:
  std::size_t n_;
  T* p_;
  bool constructed_ = false;
};

}  // namespace promptly::detail
