// Exceptions Promptly throws for errors that callers must handle.
#pragma once

#include <stdexcept>
#include <string>

namespace promptly {

// A submission reached a runtime that is shutting down (its destructor or
// shutdown() has started). The work was not accepted and will not run.
class runtime_stopped : public std::runtime_error {
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

}  // namespace promptly
