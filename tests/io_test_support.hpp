// Helpers shared by the io_*_test.cpp suites: runtimes, exact reads, and
// waiting for events with generous hang guards (this VM is noisy;
// ThreadSanitizer is slower still). Tests synchronise on events; a deadline
// here only turns a hang into a failure.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "promptly/io.hpp"
#include "promptly/promptly.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace io_test {

using namespace std::chrono_literals;
namespace io = promptly::io;
using clock = std::chrono::steady_clock;

inline promptly::runtime_config workers(unsigned n) {
  promptly::runtime_config c;
  c.workers = n;
  return c;
}

// Runs `scenario` under a watchdog (watchdog.hpp): if it has not returned
// after `guard`, the test program aborts naming `what`. A hang (a destructor
// waiting forever) must fail the test, not block CTest until its timeout.
template <class Scenario>
void within(std::chrono::seconds guard, const char* what, Scenario scenario) {
  watchdog hang_guard_for(guard, what);
  scenario();
}

// Reads exactly n bytes (several reads if the kernel splits them).
inline std::string read_exactly(io::descriptor& d, std::size_t n, io::deadline until = 10s) {
  std::string s(n, '\0');
  std::size_t got = 0;
  while (got < n) got += io::read(d, std::span<char>(s.data() + got, n - got), until).get();
  return s;
}

inline double ms_since(clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
}

// Fails the test unless no operation or timer is left pending (leak check).
// Starts the process's reactor (it then has chosen its backend): a read of
// an empty socket must wait, which starts it; the read is then cancelled.
inline void start_reactor() {
  auto [a, b] = io::make_socket_pair();
  char byte = 0;
  std::stop_source stop;
  auto pending = io::read(b, std::span(&byte, 1), {}, stop.get_token());
  stop.request_stop();
  EXPECT_THROW(std::move(pending).get(), io::cancelled);
}

inline void expect_reactor_idle() {
  // A completed operation may still sit in the timer heap for a moment
  // (the reactor drops the heap's reference after delivering); wait briefly.
  wait_until([] { return io::stats().pending_operations == 0; }, 2s);
  EXPECT_EQ(io::stats().pending_operations, 0u);
}

}  // namespace io_test
