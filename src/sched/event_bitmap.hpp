// A set of pool ids with a lock-free insert and a batch take: how the
// mechanism records pool events for the policy thread (a pool became
// non-empty, may have become empty, was added or removed, asks for cores)
// without a lock, an allocation or a policy call.
//
// Invariants
//  * Bit i of words_[w] is set while pool 64*w+i has an untaken event;
//    summary_ bit w is set whenever words_[w] may be non-zero (set after the
//    word, cleared before the word is taken), so take() visiting the words
//    the summary names finds every bit set before the take began.
//  * All operations are seq-cst: set() followed by the notifier's fence
//    pairs with the policy thread's prepare_wait / any() re-check, so a set
//    is either seen by the re-check or wakes the thread (notifier.hpp).
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

namespace promptly::detail {

inline constexpr std::uint32_t max_pools = 4096;  // task::pool holds ids in 16 bits

class event_bitmap {
 public:
  // Returns true if the bit was clear (the first event since the last take).
  bool set(std::uint32_t id) noexcept {
    const std::uint64_t bit = std::uint64_t{1} << (id % 64);
    const bool first = (words_[id / 64].fetch_or(bit, std::memory_order_seq_cst) & bit) == 0;
    summary_.fetch_or(std::uint64_t{1} << (id / 64), std::memory_order_seq_cst);
    return first;
  }
  bool any() const noexcept { return summary_.load(std::memory_order_seq_cst) != 0; }
  // Calls f(id) for every id set, clearing it first.
  template <class F>
  void take(F&& f) {
    for (std::uint64_t s = summary_.exchange(0, std::memory_order_seq_cst); s != 0; s &= s - 1) {
      const auto w = static_cast<std::uint32_t>(std::countr_zero(s));
      for (std::uint64_t bits = words_[w].exchange(0, std::memory_order_seq_cst); bits != 0; bits &= bits - 1)
        f(w * 64 + static_cast<std::uint32_t>(std::countr_zero(bits)));
    }
  }

 private:
  static_assert(max_pools == 64 * 64, "one summary word of 64 words of 64 bits");
  std::atomic<std::uint64_t> summary_{0};
  std::atomic<std::uint64_t> words_[max_pools / 64]{};
};

}  // namespace promptly::detail
