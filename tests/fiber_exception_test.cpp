// Exception handling across fiber switches. The C++ runtime keeps the stack
// of caught exceptions (what std::current_exception() and `throw;` use) and
// the count of exceptions in flight (std::uncaught_exceptions()) per thread.
// A task that parks inside a catch handler, or in a destructor run by
// unwinding, may resume on another worker; these tests check that each task
// still sees its own exception after the park and that tasks that ran on the
// parked task's worker meanwhile see none.
//
// Invariant the tests rely on: every handler task reaches its park (counts
// down the gate's latch) before the gate opens, and a gate opens only after
// the unrelated tasks ran, so those ran while the handler tasks' exceptions
// were live on parked fibers.
#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <latch>
#include <stdexcept>
#include <string>
#include <vector>

#include "promptly/promptly.hpp"
#include "test_support.hpp"

namespace {

struct tagged_error : std::runtime_error {
  explicit tagged_error(int i) : std::runtime_error("tagged"), id(i) {}
  int id;
};

// One phase of the test: tasks count down `arrived` just before parking on
// `open`, which the test thread opens once all arrived and unrelated tasks
// ran.
struct gate {
  promptly::future<void> open;
  std::latch& arrived;
  void park() const {
    arrived.count_down();
    open.get();
  }
};

// Parks in its destructor, which runs while an exception unwinds through the
// frame: the park happens with std::uncaught_exceptions() == 1.
struct parks_while_unwinding {
  const gate& g;
  std::string& failure;
  ~parks_while_unwinding() {
    const int before = std::uncaught_exceptions();
    g.park();
    if (std::uncaught_exceptions() != before)
      failure += "uncaught_exceptions " + std::to_string(before) + " became " +
                 std::to_string(std::uncaught_exceptions()) + " across a park; ";
  }
};

// Throws its own exception, parks while it unwinds, parks again inside the
// handler, then checks that the handler's exception is still its own and
// rethrows it with `throw;`. Returns "" on success, otherwise what went wrong.
std::string catch_park_rethrow(int id, const gate& unwinding, const gate& handling) {
  std::string failure;
  try {
    try {
      parks_while_unwinding guard{unwinding, failure};
      throw tagged_error(id);
    } catch (const tagged_error&) {
      const std::exception_ptr mine = std::current_exception();
      handling.park();
      if (std::current_exception() != mine) failure += "current_exception changed across a park; ";
      throw;
    }
  } catch (const tagged_error& e) {
    if (e.id != id) failure += "rethrew task " + std::to_string(e.id) + "'s exception; ";
  }
  if (std::current_exception() != nullptr) failure += "an exception is still current after the handler; ";
  if (std::uncaught_exceptions() != 0) failure += "uncaught_exceptions != 0 after the handler; ";
  return failure;
}

std::string no_exception_here() {
  if (std::current_exception() != nullptr) return "an unrelated task sees a current exception";
  if (std::uncaught_exceptions() != 0) return "an unrelated task sees an exception in flight";
  return "";
}

enum class opener { outside_thread, task };

class FiberExceptions : public ::testing::TestWithParam<std::tuple<unsigned, opener>> {
 protected:
  // Runs unrelated tasks (while the handler tasks are parked) and checks
  // that none of them sees an exception.
  void run_unrelated(promptly::runtime& rt, int round) {
    std::vector<promptly::future<std::string>> results;
    for (int i = 0; i < 32; ++i) results.push_back(rt.submit(no_exception_here));
    for (auto& f : results) EXPECT_EQ(f.get(), "") << "round " << round;
  }
  // Opens a gate from the test thread or from a task of the runtime.
  static void open(promptly::runtime& rt, promptly::promise<void>& p, opener who) {
    if (who == opener::outside_thread)
      p.set_value();
    else
      rt.submit([&p] { p.set_value(); }).get();
  }
};

// Handler tasks park twice (unwinding, then in the handler); unrelated
// tasks run on the same workers while they are parked; each gate opens from
// another thread or from a task, and every handler task resumes on
// whichever worker picks it up.
TEST_P(FiberExceptions, ParkingInsideAHandlerKeepsEachTasksOwnException) {
  const auto [workers, who_opens] = GetParam();
  promptly::runtime_config cfg;
  cfg.workers = workers;
  promptly::runtime rt(cfg);
  const int handlers = 16;
  const int rounds = static_cast<int>(scaled(20, 4));
  for (int round = 0; round < rounds; ++round) {
    promptly::promise<void> unwind_open, catch_open;
    std::latch unwinding_in(handlers), handling_in(handlers);
    const gate unwinding{unwind_open.get_future(), unwinding_in};
    const gate handling{catch_open.get_future(), handling_in};
    std::vector<promptly::future<std::string>> results;
    for (int i = 0; i < handlers; ++i)
      results.push_back(rt.submit([i, &unwinding, &handling] { return catch_park_rethrow(i, unwinding, handling); }));
    unwinding_in.wait();
    run_unrelated(rt, round);
    open(rt, unwind_open, who_opens);
    handling_in.wait();
    run_unrelated(rt, round);
    open(rt, catch_open, who_opens);
    for (int i = 0; i < handlers; ++i) EXPECT_EQ(results[i].get(), "") << "round " << round << ", task " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, FiberExceptions,
                         ::testing::Combine(::testing::Values(1u, 2u, 4u),
                                            ::testing::Values(opener::outside_thread, opener::task)));

}  // namespace
