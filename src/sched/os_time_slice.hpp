// The time slice the runtime's threads ask of the kernel's scheduler
// (runtime_config::os_time_slice, docs/priorities.md "Beside other
// CPU-bound processes").
//
// Linux's EEVDF scheduler (6.12 and later) takes a per-thread slice
// request in sched_attr::sched_runtime for SCHED_OTHER and SCHED_BATCH
// threads, clamped to 0.1-100 ms. A thread's virtual deadline is its
// eligible time plus its slice, so a shorter slice lets the thread preempt
// a CPU-bound thread when it wakes, and makes each sched_yield push its
// deadline back by less (a yield moves it one slice). The slice is a
// request, not a reservation: the thread's share of the CPU (its weight,
// from its nice value) is unchanged.
//
// Invariants
//  * Only the calling thread's attributes change, and only the slice:
//    policy, nice value and reset-on-fork are read first and written back
//    as they were. A thread under a real-time or deadline policy is left
//    alone (a slice means nothing to it).
//  * What is reported is what sched_getattr says afterwards
//    (sched_runtime): on this machine's kernel (6.18) its default slice,
//    1.4 ms, when nothing was asked or the request was refused (a seccomp
//    filter, EPERM). A kernel that does not take slice requests (before
//    6.12) does not report the asked value either, so a caller can tell.
#pragma once

#include <chrono>

namespace promptly::detail {

// The environment variable that sets runtime_config::os_time_slice when
// the field is 0, in microseconds.
inline constexpr const char* os_time_slice_variable = "PROMPTLY_OS_SLICE_US";

// The range the kernel accepts (it clamps anything else).
inline constexpr std::chrono::microseconds min_os_time_slice{100};
inline constexpr std::chrono::microseconds max_os_time_slice{100'000};
// 0 (the kernel's default) or a slice within that range: the one rule for
// the field, the environment variable and promptlyd's option.
constexpr bool valid_os_time_slice(std::chrono::microseconds s) noexcept {
  return s.count() == 0 || (s >= min_os_time_slice && s <= max_os_time_slice);
}

// runtime_config::os_time_slice if non-zero, else the environment
// variable's value, else 0 (the kernel's default). Throws
// std::invalid_argument naming the variable if it is not a number of
// microseconds in [min_os_time_slice, max_os_time_slice].
std::chrono::microseconds resolve_os_time_slice(std::chrono::microseconds configured);

// Asks the kernel for `slice` for the calling thread (0: asks nothing) and
// returns the slice the kernel reports for it afterwards (0: none).
std::chrono::microseconds request_os_time_slice(std::chrono::microseconds slice) noexcept;

}  // namespace promptly::detail
