// Sanitizer options built into every test executable of the sanitizer builds, so that ctest,
// gtest discovery and a developer running one binary by hand all get the same settings (an
// environment variable set per ctest entry was lost once: a list-valued ENVIRONMENT passed
// through gtest_discover_tests keeps only its first entry). TSAN_OPTIONS / ASAN_OPTIONS /
// UBSAN_OPTIONS in the environment still override these, and are set for the programs the
// tests start (below).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

namespace {
// tsan.supp says why each suppression is there (libstdc++ is not instrumented).
[[maybe_unused]] constexpr const char* tsan_options =
    "halt_on_error=1:second_deadlock_stack=1:suppressions=" PROMPTLY_TSAN_SUPPRESSIONS;
// Fibers do not support fake stacks (src/sched/fiber_stack.cpp).
[[maybe_unused]] constexpr const char* asan_options = "detect_stack_use_after_return=0";
[[maybe_unused]] constexpr const char* ubsan_options = "print_stacktrace=1:halt_on_error=1";
}  // namespace

extern "C" {
#if PROMPTLY_TEST_BUILD_TSAN
const char* __tsan_default_options() { return tsan_options; }
#endif
#if PROMPTLY_TEST_BUILD_ASAN
const char* __asan_default_options() { return asan_options; }
const char* __ubsan_default_options() { return ubsan_options; }
#endif
}

namespace {
// The sanitized programs a test starts (promptlyd, the apps, the benches' drivers) read the
// same options from the environment, which they inherit; a value already set is kept.
[[maybe_unused]] const bool exported_to_children = [] {
#if PROMPTLY_TEST_BUILD_TSAN
  setenv("TSAN_OPTIONS", tsan_options, 0);
#endif
#if PROMPTLY_TEST_BUILD_ASAN
  setenv("ASAN_OPTIONS", asan_options, 0);
  setenv("UBSAN_OPTIONS", ubsan_options, 0);
#endif
  return true;
}();
}  // namespace

namespace {

struct polymorphic_error : std::runtime_error {
  using std::runtime_error::runtime_error;
  virtual int code() const noexcept { return 7; }
};

}  // namespace

// An exception that one thread reads in a catch block and another thread frees later, ordered
// only by libstdc++'s (uninstrumented) reference count: what a future's exception goes through
// when the caller's handle is gone before its catch block runs and a worker drops the last
// reference. Correct code; under TSan it passes only if tsan.supp is loaded (halt_on_error
// would end the process on the report).
TEST(SanitizerSetup, AnExceptionFreedByAnotherThreadAfterItsCatchIsNotReported) {
  std::exception_ptr owner = std::make_exception_ptr(polymorphic_error("shared"));
  std::atomic<bool> reader_done{false};
  int seen = 0;
  std::thread reader([copy = owner, &reader_done, &seen]() mutable {
    try {
      std::rethrow_exception(copy);
    } catch (const polymorphic_error& e) {
      seen = e.code();  // a virtual call: reads the object's vptr
    }
    copy = nullptr;
    // Relaxed on purpose: the only order between the read above and the free below is the
    // exception's own reference count, as in the runtime.
    reader_done.store(true, std::memory_order_relaxed);
  });
  while (!reader_done.load(std::memory_order_relaxed)) std::this_thread::yield();
  owner = nullptr;  // the last reference: the destructor writes the vptr
  reader.join();
  EXPECT_EQ(seen, 7);
}

// The programs a test starts inherit the options (a sanitized promptlyd without tsan.supp
// stops at the first libstdc++ or cpp-httplib false positive).
TEST(SanitizerSetup, ProgramsTheTestsStartInheritTheOptions) {
#if PROMPTLY_TEST_BUILD_TSAN
  ASSERT_NE(std::getenv("TSAN_OPTIONS"), nullptr);
#endif
#if PROMPTLY_TEST_BUILD_ASAN
  ASSERT_NE(std::getenv("ASAN_OPTIONS"), nullptr);
  ASSERT_NE(std::getenv("UBSAN_OPTIONS"), nullptr);
#endif
}
