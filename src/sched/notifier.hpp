// The notifier: an EventCount (Taskflow executor paper, Sec. II-A, after Eigen's) with one
// waiter slot per worker, so that a notification can be aimed at a worker
// that serves a given level (or at one chosen worker, when the policy moves
// it). The two-phase wait lets a thief go to sleep without missing a
// wake-up:
//
//   waiter:    prepare_wait(slot);  re-check the condition;
//              then cancel_wait(slot) or commit_wait(slot[, timeout])
//   notifier:  make the condition true; notify(slot) / notify_one(pred)
//
// Invariant (no lost wake-up): prepare_wait stores `preparing` (seq-cst)
// before the waiter re-reads the condition; a notifier that changed the
// condition issues a seq-cst fence before it reads the slots. So either
// the notifier sees the slot preparing or sleeping and marks it notified
// (the waiter's commit then returns at once, or the futex wakes it), or the
// waiter's re-check sees the condition. A slot leaves `notified` only by its
// own waiter.
//
// A slot may also sleep inside an external wait (external_poll.hpp: the I/O
// reactor's epoll set) in state `sleeping_external`. Its notifier then
// rings the external source's doorbell instead of the futex, after its CAS
// to `notified`, so the rule above is unchanged: the waiter's wait returns
// once the doorbell rings, and it re-reads its state before every block.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace promptly::detail {

struct sleep_slot {
  enum : std::uint32_t { awake = 0, preparing = 1, sleeping = 2, notified = 3, sleeping_external = 4 };
  alignas(64) std::atomic<std::uint32_t> state{awake};
  // When a notifier woke the slot from `sleeping` (steady clock, ns), for
  // the wake-up's latency. Relaxed: a statistic; written before the futex
  // wake, read by the woken waiter.
  std::atomic<std::uint64_t> notified_ns{0};
};

class notifier {
 public:
  static void prepare_wait(sleep_slot& s) noexcept { s.state.store(sleep_slot::preparing, std::memory_order_seq_cst); }
  static void cancel_wait(sleep_slot& s) noexcept { s.state.store(sleep_slot::awake, std::memory_order_seq_cst); }
  // Sleeps until notified; with a timeout > 0, at most that long. Returns
  // how long the wake-up took (notify to running again, ns) when a notifier
  // woke the slot from a real sleep, else 0.
  static std::uint64_t commit_wait(sleep_slot& s, std::chrono::nanoseconds timeout = std::chrono::nanoseconds{0}) noexcept;
  // As commit_wait without a timeout, but asleep in the external wait when
  // one is installed and free (else on the futex). It may also return
  // without a notification, having made tasks ready (`made_ready`) or given
  // the wait up: the caller re-checks its work as after any wake-up.
  static std::uint64_t commit_wait_polling(sleep_slot& s, bool& made_ready) noexcept;
  // Wakes the slot if it is preparing or sleeping (on the futex or in the
  // external wait). Returns true if it did.
  // The caller must have made its condition visible (fence_before_notify).
  static bool notify(sleep_slot& s) noexcept;
  static void fence_before_notify() noexcept { std::atomic_thread_fence(std::memory_order_seq_cst); }
  static bool is_waiting(const sleep_slot& s) noexcept {
    const auto v = s.state.load(std::memory_order_seq_cst);
    return v == sleep_slot::preparing || v == sleep_slot::sleeping || v == sleep_slot::sleeping_external;
  }
  // Asleep (on the futex or in the external wait), for statistics: relaxed.
  static bool is_asleep(const sleep_slot& s) noexcept {
    const auto v = s.state.load(std::memory_order_relaxed);
    return v == sleep_slot::sleeping || v == sleep_slot::sleeping_external;
  }
};

}  // namespace promptly::detail
