#include "notifier.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace promptly::detail {
namespace {

long futex(std::atomic<std::uint32_t>* addr, int op, std::uint32_t val, const timespec* timeout) noexcept {
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), op, val, timeout, nullptr, 0);
}

}  // namespace

void notifier::commit_wait(std::uint32_t key, std::chrono::nanoseconds timeout) noexcept {
  if (timeout.count() > 0) {
    timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000), static_cast<long>(timeout.count() % 1'000'000'000)};
    // One timed sleep; a spurious return only shortens the nap.
    if (epoch_.load(std::memory_order_acquire) == key) futex(&epoch_, FUTEX_WAIT_PRIVATE, key, &ts);
  } else {
    // The futex compares epoch_ with key atomically with going to sleep.
    while (epoch_.load(std::memory_order_acquire) == key) futex(&epoch_, FUTEX_WAIT_PRIVATE, key, nullptr);
  }
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void notifier::notify(int how_many) noexcept {
  // Seq-cst fence: orders the caller's condition change before reading waiters_.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_relaxed) == 0) return;
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  futex(&epoch_, FUTEX_WAKE_PRIVATE, how_many < 0 ? INT_MAX : static_cast<std::uint32_t>(how_many), nullptr);
}

}  // namespace promptly::detail
