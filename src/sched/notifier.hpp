// The notifier: an EventCount (seed 002 Sec. II-A, after Eigen's), the
// two-phase wait that lets a thief go to sleep without missing a wake-up.
//
//   waiter:    key = prepare_wait();  re-check the condition;
//              then cancel_wait() or commit_wait(key[, timeout])
//   notifier:  make the condition true; notify_one() / notify_all()
//
// Invariant (no lost wake-up): a notify that follows the condition change
// either sees the waiter counted (seq-cst RMW in prepare_wait vs. the fence
// in notify) and bumps the epoch, which makes commit_wait return or the
// futex refuse to sleep, or it precedes prepare_wait, and then the waiter's
// re-check sees the condition.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace promptly::detail {

class notifier {
 public:
  std::uint32_t prepare_wait() noexcept {
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    return epoch_.load(std::memory_order_seq_cst);
  }
  void cancel_wait() noexcept { waiters_.fetch_sub(1, std::memory_order_seq_cst); }
  // Sleeps until a notify after prepare_wait; with a timeout > 0, at most that long.
  void commit_wait(std::uint32_t key, std::chrono::nanoseconds timeout = std::chrono::nanoseconds{0}) noexcept;
  void notify_one() noexcept { notify(1); }
  void notify_all() noexcept { notify(-1); }
  // Workers counted as preparing or sleeping (a hint).
  int waiting() const noexcept { return waiters_.load(std::memory_order_relaxed); }

 private:
  void notify(int how_many) noexcept;
  alignas(64) std::atomic<std::uint32_t> epoch_{0};
  alignas(64) std::atomic<int> waiters_{0};
};

}  // namespace promptly::detail
