// Exceptions Promptly throws for errors that callers must handle.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace promptly {

// A submission reached a runtime that is shutting down (its destructor or
// shutdown() has started). The work was not accepted and will not run.
class runtime_stopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Work was submitted to a pool that is being removed or was removed
// (runtime::remove_pool). The work was not accepted and will not run.
class pool_removed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A call that needs a worker of a runtime (promptly::async, task_group::spawn)
// was made from a thread that is not one; use runtime::submit or runtime::run.
class not_on_worker : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// get() on a future that holds no shared state (default-constructed or moved from).
class future_empty : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A promise was destroyed before a value or exception was set; every
// future of it rethrows this from get().
class broken_promise : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// set_value / set_exception called on a promise that already has a result.
class promise_already_satisfied : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Code touched a future whose priority is not declared at least as urgent as
// its own (rule TOUCH of "Responsive Parallelism with Futures and State",
// PLDI 2020; IncompatiblePriorities in "Fairness in Responsive Parallelism",
// ICFP 2019, Sec. 5.3).
// Thrown by the dynamic priority API (promptly/typed/dynamic_order.hpp); the
// typed API rejects the same touches at compile time.
class priority_inversion : public std::logic_error {
 public:
  priority_inversion(const std::string& touched, const std::string& toucher)
      : std::logic_error("promptly: priority inversion: touching a future at priority '" + touched +
                         "' from code at priority '" + toucher + "', but '" + touched +
                         "' is not declared at least as urgent as '" + toucher + "' (rule TOUCH, docs/typed-priorities.md)"),
        names_(std::make_shared<const std::pair<std::string, std::string>>(touched, toucher)) {}
  // The priority of the touched future and that of the code that touched it.
  const std::string& touched() const noexcept { return names_->first; }
  const std::string& toucher() const noexcept { return names_->second; }

 private:
  std::shared_ptr<const std::pair<std::string, std::string>> names_;  // shared: copying never throws
};

}  // namespace promptly
