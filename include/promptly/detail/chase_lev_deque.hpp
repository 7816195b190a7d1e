// Chase-Lev work-stealing deque with the C11 memory orderings of
// Le, Pop, Cohen, Zappa Nardelli, "Correct and Efficient Work-Stealing for
// Weak Memory Models" (PPoPP 2013), cited by Taskflow's executor paper
// ("An Efficient Work-Stealing Scheduler for Task Dependency Graph"),
// Sec. II-A.
//
// Invariants
//  * Only the owning worker calls push() and pop() (the bottom end); any
//    thread may call steal() (the top end).
//  * top_ never decreases; an item at index i is handed out exactly once,
//    decided by the CAS on top_ whenever owner and thieves race for it.
//  * Arrays replaced by grow() stay alive until the deque is destroyed,
//    because a thief may still read from the array it loaded.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace promptly::detail {

inline constexpr std::size_t cache_line = 64;

template <class T>
  requires std::is_pointer_v<T>
class chase_lev_deque {
  struct ring {
    explicit ring(std::int64_t capacity)
        : mask(capacity - 1), slots(std::make_unique<std::atomic<T>[]>(static_cast<std::size_t>(capacity))) {}
    std::int64_t capacity() const noexcept { return mask + 1; }
    T load(std::int64_t i) const noexcept { return slots[static_cast<std::size_t>(i & mask)].load(std::memory_order_relaxed); }
    void store(std::int64_t i, T x) noexcept { slots[static_cast<std::size_t>(i & mask)].store(x, std::memory_order_relaxed); }
    std::int64_t mask;
    std::unique_ptr<std::atomic<T>[]> slots;
  };

 public:
  // capacity must be a power of two.
  explicit chase_lev_deque(std::int64_t capacity = 1024) {
    rings_.push_back(std::make_unique<ring>(capacity));
    ring_.store(rings_.back().get(), std::memory_order_relaxed);
  }
  chase_lev_deque(const chase_lev_deque&) = delete;
  chase_lev_deque& operator=(const chase_lev_deque&) = delete;

  // Owner only.
  void push(T x) {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    ring* r = ring_.load(std::memory_order_relaxed);
    if (b - t > r->capacity() - 1) [[unlikely]]
      r = grow(r, t, b);
    r->store(b, x);
    // Release: the item (and the task it points to) is visible to a thief
    // that reads the new bottom. Le et al. use a release fence followed by a
    // relaxed store; a release store is the same on x86 and is understood by
    // ThreadSanitizer, which does not model fences.
    bottom_.store(b + 1, std::memory_order_release);
  }

  // Owner only. Like push, but never allocates: returns false (and pushes
  // nothing) when the ring is full. The noexcept wake path uses it.
  bool try_push(T x) noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    ring* r = ring_.load(std::memory_order_relaxed);
    if (b - t > r->capacity() - 1) return false;
    r->store(b, x);
    bottom_.store(b + 1, std::memory_order_release);  // release: as in push
    return true;
  }

  // Owner only. Returns nullptr when empty or when a thief won the last item.
  T pop() noexcept {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    ring* r = ring_.load(std::memory_order_relaxed);
    bottom_.store(b, std::memory_order_relaxed);
    // Seq-cst fence: the bottom decrement must be ordered before reading top,
    // so that a concurrent thief either sees the item gone or we see its CAS.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_relaxed);
    if (t > b) {  // empty: restore bottom
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    T x = r->load(b);
    if (t == b) {  // last item: race with thieves through top
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed))
        x = nullptr;  // a thief took it
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return x;
  }

  // Any thread. Returns nullptr when empty or when the race for the top item
  // was lost (the caller treats both as a failed steal).
  T steal() noexcept {
    std::int64_t t = top_.load(std::memory_order_acquire);
    // Seq-cst fence: pairs with the fence in pop(), orders top before bottom.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t b = bottom_.load(std::memory_order_acquire);
    if (t >= b) return nullptr;
    ring* r = ring_.load(std::memory_order_acquire);
    T x = r->load(t);
    // The CAS decides ownership of index t; seq-cst as in Le et al.
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed))
      return nullptr;
    return x;
  }

  // Racy snapshot; exact when called by the owner with no concurrent thief.
  bool empty() const noexcept {
    return bottom_.load(std::memory_order_relaxed) <= top_.load(std::memory_order_relaxed);
  }

 private:
  ring* grow(ring* old, std::int64_t t, std::int64_t b) {
    rings_.push_back(std::make_unique<ring>(old->capacity() * 2));
    ring* bigger = rings_.back().get();
    for (std::int64_t i = t; i < b; ++i) bigger->store(i, old->load(i));
    // Release: a thief that loads the new ring sees its copied slots.
    ring_.store(bigger, std::memory_order_release);
    return bigger;
  }

  alignas(cache_line) std::atomic<std::int64_t> top_{0};
  alignas(cache_line) std::atomic<std::int64_t> bottom_{0};
  alignas(cache_line) std::atomic<ring*> ring_{nullptr};
  std::vector<std::unique_ptr<ring>> rings_;  // owner only; keeps retired rings alive
};

}  // namespace promptly::detail
