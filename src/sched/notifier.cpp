#include "notifier.hpp"

#include "external_poll.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

namespace promptly::detail {
namespace {

long futex(std::atomic<std::uint32_t>* addr, int op, std::uint32_t val, const timespec* timeout) noexcept {
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), op, val, timeout, nullptr, 0);
}

std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Leaves the sleep: awake again. The wake-up's latency (notify to running
// again, ns) when a notifier woke the slot, else 0.
std::uint64_t wake_latency(sleep_slot& s) noexcept {
  const bool notified = s.state.exchange(sleep_slot::awake, std::memory_order_seq_cst) == sleep_slot::notified;
  if (!notified) return 0;  // a nap timed out, or an external wait returned by itself
  const std::uint64_t at = s.notified_ns.load(std::memory_order_relaxed);  // relaxed: a statistic
  const std::uint64_t now = steady_ns();
  return at != 0 && now > at ? now - at : 0;
}

// The futex sleep of a slot in `sleeping`; returns the wake-up's latency
// (commit_wait).
std::uint64_t sleep_on_futex(sleep_slot& s, std::chrono::nanoseconds timeout) noexcept {
  if (timeout.count() > 0) {
    timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000), static_cast<long>(timeout.count() % 1'000'000'000)};
    // One timed sleep; a spurious return only shortens the nap.
    futex(&s.state, FUTEX_WAIT_PRIVATE, sleep_slot::sleeping, &ts);
  } else {
    // The futex compares the state with `sleeping` atomically with sleeping.
    while (s.state.load(std::memory_order_seq_cst) == sleep_slot::sleeping)
      futex(&s.state, FUTEX_WAIT_PRIVATE, sleep_slot::sleeping, nullptr);
  }
  return wake_latency(s);
}

}  // namespace

std::uint64_t notifier::commit_wait(sleep_slot& s, std::chrono::nanoseconds timeout) noexcept {
  std::uint32_t expected = sleep_slot::preparing;
  if (!s.state.compare_exchange_strong(expected, sleep_slot::sleeping, std::memory_order_seq_cst)) {
    s.state.store(sleep_slot::awake, std::memory_order_seq_cst);  // notified while preparing
    return 0;
  }
  return sleep_on_futex(s, timeout);
}

std::uint64_t notifier::commit_wait_polling(sleep_slot& s, bool& made_ready) noexcept {
  made_ready = false;
  std::uint32_t expected = sleep_slot::preparing;
  if (!s.state.compare_exchange_strong(expected, sleep_slot::sleeping_external, std::memory_order_seq_cst)) {
    s.state.store(sleep_slot::awake, std::memory_order_seq_cst);  // notified while preparing
    return 0;
  }
  const external_wait_result r = wait_in_external_sources(s.state, sleep_slot::sleeping_external);
  if (r == external_wait_result::unavailable) {
    // A notifier that saw `sleeping_external` rang the doorbell instead of
    // the futex: then the CAS fails and the notification is taken here.
    expected = sleep_slot::sleeping_external;
    if (s.state.compare_exchange_strong(expected, sleep_slot::sleeping, std::memory_order_seq_cst))
      return sleep_on_futex(s, std::chrono::nanoseconds{0});
  }
  made_ready = r == external_wait_result::made_ready;
  return wake_latency(s);
}

bool notifier::notify(sleep_slot& s) noexcept {
  std::uint32_t v = s.state.load(std::memory_order_seq_cst);
  while (v == sleep_slot::preparing || v == sleep_slot::sleeping || v == sleep_slot::sleeping_external) {
    // Stamped before the CAS, so the waiter that sees `notified` sees the
    // stamp too (the seq-cst CAS orders it). Relaxed: a statistic.
    if (v != sleep_slot::preparing) s.notified_ns.store(steady_ns(), std::memory_order_relaxed);
    if (s.state.compare_exchange_weak(v, sleep_slot::notified, std::memory_order_seq_cst)) {
      if (v == sleep_slot::sleeping) futex(&s.state, FUTEX_WAKE_PRIVATE, 1, nullptr);
      // After the CAS: the waiter re-reads its state before every block of
      // its wait, so the doorbell only has to end a block already begun.
      if (v == sleep_slot::sleeping_external) wake_external_waiter();
      return true;
    }
  }
  return false;
}

}  // namespace promptly::detail
