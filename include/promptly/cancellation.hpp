// Cancellation: the standard stop token, as everywhere else in Promptly (io:: operations,
// job_context::stop_token(), io::listener handlers), so one std::stop_source cancels a
// job's I/O, its task groups and its algorithms alike (docs/algorithms.md, "Cancellation").
//
//   std::stop_source stop;
//   promptly::parallel_for(stop.get_token(), 0, n, body);        // throws promptly::cancelled if
//                                                                // stop.request_stop() skipped pieces
//   promptly::task_group tg(stop.get_token());                   // or tg.cancel()
//   if (tg.wait() == promptly::task_group_status::canceled) ...  // children were skipped
//
// Cancelling is cooperative, as oneTBB's: work that has started runs to its end (a body polls
// the token to stop early); work not yet started is skipped, and what skipped it says so: an
// algorithm throws promptly::cancelled, a task group's wait() returns
// task_group_status::canceled. Nothing is dropped silently.
//
// cancel_scope (below) is what the algorithms share between their pieces: the caller's token,
// the first exception a piece threw (which stops the others, as a cancellation does), and
// whether some piece was skipped.
//
// Invariants (cancel_scope)
//  * stopped_ goes false -> true once (first exception or observed stop request), never back.
//  * error_ is written once, by the piece whose exchange set has_error_, and read only after
//    every piece finished (the joins order those writes before finish()).
//  * skipped_ is set by a piece that did not run its work because the scope was stopped;
//    finish() reports it as promptly::cancelled unless an exception is to be rethrown.
#pragma once

#include <atomic>
#include <cassert>
#include <exception>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>

namespace promptly {

// The token the algorithms and task groups take: a std::stop_token.
using cancellation_token = std::stop_token;

// Thrown by an algorithm given a cancellation token when a stop request made it skip work: the
// result (the output range, the reduction) is incomplete. A sort leaves its range a permutation
// of its input; a scan's output holds an unspecified mix of old and new values.
class cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

class cancel_scope {
 public:
  cancel_scope() noexcept = default;
  explicit cancel_scope(std::stop_token t) noexcept : token_(std::move(t)) {}
  cancel_scope(const cancel_scope&) = delete;
  cancel_scope& operator=(const cancel_scope&) = delete;

  // True once a piece threw or the token was requested: pieces not yet started are skipped.
  // One relaxed load, plus the token's when one was given.
  bool stopped() const noexcept {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    if (token_.stop_possible() && token_.stop_requested()) [[unlikely]] {
      stopped_.store(true, std::memory_order_relaxed);
      return true;
    }
    return false;
  }

  // Whether a stop request can come (a token was given).
  bool cancellable() const noexcept { return token_.stop_possible(); }

  // A piece calls this before its work: false (and the skip is noted) if the scope is stopped.
  bool enter() const noexcept {
    if (!stopped()) return true;
    skipped_.store(true, std::memory_order_relaxed);
    return false;
  }

  // Runs one piece's work unless the scope is stopped; an exception is kept (the first one) and
  // stops the scope.
  template <class F>
  void run(F&& f) noexcept {
    if (!enter()) return;
    try {
      std::forward<F>(f)();
    } catch (...) {
      record(std::current_exception());
    }
  }

  void record(std::exception_ptr e) noexcept {
    if (!has_error_.exchange(true, std::memory_order_acq_rel)) error_ = std::move(e);
    stopped_.store(true, std::memory_order_relaxed);
  }

  // Called once every piece finished: rethrows the first exception, else throws cancelled if a
  // piece was skipped (`what` names the algorithm).
  void finish(const char* what) const {
    assert((!has_error_.load(std::memory_order_relaxed) || stopped_.load(std::memory_order_relaxed)) &&
           "an exception stops the scope");
    if (has_error_.load(std::memory_order_acquire)) std::rethrow_exception(error_);
    if (skipped_.load(std::memory_order_relaxed))
      throw cancelled(std::string("promptly::") + what + ": cancelled by its stop token before every piece ran");
  }

 private:
  std::stop_token token_;
  mutable std::atomic<bool> stopped_{false};
  mutable std::atomic<bool> skipped_{false};
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_;
};

}  // namespace detail

}  // namespace promptly
