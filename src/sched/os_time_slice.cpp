#include "os_time_slice.hpp"

#include <linux/sched.h>  // SCHED_NORMAL, SCHED_BATCH, SCHED_FLAG_RESET_ON_FORK
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace promptly::detail {

namespace {

// The kernel's struct sched_attr, first version (SCHED_ATTR_SIZE_VER1, 56
// bytes; later versions only append). Declared here because
// <linux/sched/types.h> redefines glibc's sched_param, and glibc wraps
// neither system call.
struct sched_attr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};
static_assert(sizeof(sched_attr) == 56, "SCHED_ATTR_SIZE_VER1");

bool read_attr(sched_attr& a) noexcept {
  a = sched_attr{};
  return ::syscall(SYS_sched_getattr, 0, &a, static_cast<unsigned>(sizeof(a)), 0U) == 0;
}

}  // namespace

std::chrono::microseconds resolve_os_time_slice(std::chrono::microseconds configured) {
  if (configured.count() != 0) return configured;  // validate() checked its range
  const char* text = std::getenv(os_time_slice_variable);
  if (text == nullptr || *text == '\0') return std::chrono::microseconds{0};  // empty counts as unset
  errno = 0;
  char* end = nullptr;
  const long long us = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || us == 0 || !valid_os_time_slice(std::chrono::microseconds{us}))
    throw std::invalid_argument(std::string("promptly: ") + os_time_slice_variable + " = '" + text +
                                "' is not a slice in microseconds within " +
                                std::to_string(min_os_time_slice.count()) + ".." +
                                std::to_string(max_os_time_slice.count()));
  return std::chrono::microseconds{us};
}

std::chrono::microseconds request_os_time_slice(std::chrono::microseconds slice) noexcept {
  sched_attr a;
  if (!read_attr(a)) return std::chrono::microseconds{0};
  if (a.sched_policy != SCHED_NORMAL && a.sched_policy != SCHED_BATCH) return std::chrono::microseconds{0};
  if (slice.count() != 0) {
    // Written back as read: policy, nice, reset-on-fork. The utilization
    // clamps are kept by not setting SCHED_FLAG_UTIL_CLAMP.
    a.size = sizeof(a);
    a.sched_flags &= SCHED_FLAG_RESET_ON_FORK;
    a.sched_runtime = static_cast<std::uint64_t>(slice.count()) * 1000;
    (void)::syscall(SYS_sched_setattr, 0, &a, 0U);  // refused: the slice read below is the old one
    if (!read_attr(a)) return std::chrono::microseconds{0};
  }
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::nanoseconds{a.sched_runtime});
}

}  // namespace promptly::detail
