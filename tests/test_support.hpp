// Shared helpers for the tests: sizes scale down under ThreadSanitizer.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
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

// A slow client's attack: sends `bytes` over socket `fd` one at a time, `pace` apart, until the
// peer has something to say (a reply, or the end of the connection) or the bytes run out;
// returns how many it sent. The pace is the attack, not a synchronisation: the peer's answer is
// the event the caller waits for.
inline std::size_t trickle_until_answered(int fd, std::string_view bytes, std::chrono::milliseconds pace) {
  for (std::size_t sent = 0; sent < bytes.size(); ++sent) {
    if (::send(fd, bytes.data() + sent, 1, MSG_NOSIGNAL) != 1) return sent;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(pace.count())) > 0) return sent + 1;
  }
  return bytes.size();
}
