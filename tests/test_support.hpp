// Shared helpers for the tests: sizes scale down under ThreadSanitizer.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <string>
#include <thread>

#include "sched/toolchain.hpp"

inline constexpr bool under_tsan = PROMPTLY_UNDER_TSAN;

// AddressSanitizer (with UBSan: the PROMPTLY_ASAN build). UBSan's vptr check
// probes memory through a pipe, so a test that exhausts descriptors gets
// false "invalid vptr" reports there.
inline constexpr bool under_asan = PROMPTLY_UNDER_ASAN;

// The build says which sanitizer it asked for (tests/CMakeLists.txt); the compiler must see the
// same, or the tests' skips and scalings silently do the wrong thing: Clang 14 defines no
// __SANITIZE_* macro, and a check of those alone took its TSan build for a plain one.
static_assert(under_tsan == (PROMPTLY_TEST_BUILD_TSAN != 0), "the PROMPTLY_TSAN build must compile under ThreadSanitizer, and only it");
static_assert(under_asan == (PROMPTLY_TEST_BUILD_ASAN != 0), "the PROMPTLY_ASAN build must compile under AddressSanitizer, and only it");

// n normally, n / divisor under ThreadSanitizer (at least 1).
inline std::size_t scaled(std::size_t n, std::size_t divisor = 20) {
  if (!under_tsan) return n;
  return n / divisor > 0 ? n / divisor : 1;
}

// The message of the E that f() throws, or "(no exception)"; any other
// exception propagates (and fails the test).
template <class E = std::exception, class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception)";
}

// How long a test waits for an event before it calls the code hung.
inline constexpr std::chrono::seconds hang_guard{30};
// The same for the apps' closed-loop driver runs (hundreds of requests, each
// moving cores between levels under the priority policies). Beside other
// CPU-bound processes they slow down sharply: the email driver's test took
// 0.11 s alone under prompt and 0.5-3.7 s beside three spinning processes
// (5.0-19.8 s before thieves stopped yielding to them; bench/results/apps/
// foreign-load/); ctest -j4 on 2 cores once took it past 30 s.
inline constexpr std::chrono::seconds driver_hang_guard{120};

// Polls `pred` (a flag, counter or stats value that proves a state was
// reached) until it holds; false if it still does not after `limit`, a hang
// guard only (the caller fails the test), never the synchronisation itself.
template <class Pred>
bool wait_until(Pred pred, std::chrono::seconds limit = hang_guard) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::yield();
  }
  return true;
}
