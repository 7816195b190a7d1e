// runtime_config::os_time_slice: the slice the workers ask of the kernel's
// EEVDF scheduler (src/sched/os_time_slice.hpp). The checks of what the
// kernel granted skip on a kernel that does not take slice requests
// (before Linux 6.12), saying so; validation is checked everywhere.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "promptly/promptly.hpp"
#include "sched/os_time_slice.hpp"
#include "test_support.hpp"
#include "worker_probe.hpp"

namespace {

using std::chrono::microseconds;

// Sets the environment variable for the scope (tests run one at a time in
// this process; no runtime is alive when it changes).
struct scoped_env {
  explicit scoped_env(const char* value) { ::setenv(promptly::detail::os_time_slice_variable, value, 1); }
  ~scoped_env() { ::unsetenv(promptly::detail::os_time_slice_variable); }
};

// What a fresh thread gets when it asks for `slice`: the kernel's answer.
microseconds granted_to_a_fresh_thread(microseconds slice) {
  microseconds got{-1};
  std::thread([&] { got = promptly::detail::request_os_time_slice(slice); }).join();
  return got;
}

#define SKIP_UNLESS_THE_KERNEL_TAKES_SLICES()                                                              \
  if (const microseconds got = granted_to_a_fresh_thread(microseconds{250}); got != microseconds{250}) \
  GTEST_SKIP() << "this kernel does not take slice requests (asked 250 us, it reports " << got.count() << " us)"

std::string message_of(const promptly::runtime_config& cfg) {
  try {
    promptly::runtime rt{cfg};
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OsTimeSlice, OutsideTheKernelsRangeIsRejectedNamingTheField) {
  promptly::runtime_config cfg;
  for (const long long us : {1LL, 99LL, 100'001LL, -100LL}) {
    cfg.os_time_slice = microseconds{us};
    EXPECT_NE(message_of(cfg).find("os_time_slice"), std::string::npos) << us << " us was accepted";
  }
  for (const long long us : {0LL, 100LL, 100'000LL}) {
    cfg.os_time_slice = microseconds{us};
    EXPECT_NO_THROW(promptly::validate(cfg)) << us << " us";
  }
}

TEST(OsTimeSlice, ABadEnvironmentValueIsRejectedNamingTheVariable) {
  for (const char* bad : {"fast", "100us", "50", "200000", "-300", "99999999999999999999"}) {
    scoped_env env{bad};
    const std::string what = message_of(promptly::runtime_config{});
    EXPECT_NE(what.find(promptly::detail::os_time_slice_variable), std::string::npos)
        << "'" << bad << "' gave: '" << what << "'";
  }
}

TEST(OsTimeSlice, EveryWorkerThreadGetsTheSliceAndReportsIt) {
  SKIP_UNLESS_THE_KERNEL_TAKES_SLICES();
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.os_time_slice = microseconds{300};
  promptly::runtime rt{cfg};
  std::vector<microseconds> seen(rt.workers(), microseconds{-1});
  ASSERT_FALSE(capture_workers(rt, [&](unsigned i) {
                 seen[i] = promptly::detail::request_os_time_slice(microseconds{0});  // 0: only reads
               }).empty());
  for (unsigned i = 0; i < rt.workers(); ++i) EXPECT_EQ(seen[i], microseconds{300}) << "task " << i;
  for (const auto& ws : rt.stats().worker_states) EXPECT_EQ(ws.os_time_slice_us, 300);
}

TEST(OsTimeSlice, TheEnvironmentVariableSetsItWhenTheFieldIsZero) {
  SKIP_UNLESS_THE_KERNEL_TAKES_SLICES();
  scoped_env env{"400"};
  promptly::runtime_config cfg;
  cfg.workers = 2;
  {
    promptly::runtime rt{cfg};
    ASSERT_FALSE(capture_workers(rt).empty());
    for (const auto& ws : rt.stats().worker_states) EXPECT_EQ(ws.os_time_slice_us, 400);
  }
  cfg.os_time_slice = microseconds{200};  // the field wins over the variable
  promptly::runtime rt{cfg};
  ASSERT_FALSE(capture_workers(rt).empty());
  for (const auto& ws : rt.stats().worker_states) EXPECT_EQ(ws.os_time_slice_us, 200);
}

// The request changes only the slice: a nice value the workers inherited
// from the thread that made the runtime stays. (Writing sched_nice = 0
// back would lower it, which root may do, so this fails as root too.)
TEST(OsTimeSlice, TheWorkersKeepTheNiceValueTheyInherited) {
  SKIP_UNLESS_THE_KERNEL_TAKES_SLICES();
  std::vector<int> nice_of(2, -100);
  std::vector<microseconds> slice_of(2, microseconds{-1});
  bool captured = false;
  std::thread([&] {
    // Raising one's own nice value needs no privilege; the threads this
    // thread starts inherit it.
    ASSERT_EQ(::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 7), 0);
    promptly::runtime_config cfg;
    cfg.workers = 2;
    cfg.os_time_slice = microseconds{500};
    promptly::runtime rt{cfg};
    captured = !capture_workers(rt, [&](unsigned i) {
                  nice_of[i] = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
                  slice_of[i] = promptly::detail::request_os_time_slice(microseconds{0});
                }).empty();
  }).join();
  ASSERT_TRUE(captured);
  for (unsigned i = 0; i < 2; ++i) {
    EXPECT_EQ(nice_of[i], 7) << "worker task " << i;
    EXPECT_EQ(slice_of[i], microseconds{500}) << "worker task " << i;
  }
}
