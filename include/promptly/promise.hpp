// promise<T>: the producing end of a future that no task computes, for
// results that arrive from elsewhere (an I/O reactor, a timer, another
// thread, a callback API).
//
// set_value / set_exception may be called from any thread, once; the
// futures' waiters are woken (parked fibers become ready tasks of their
// runtime). A promise destroyed without a result breaks: its futures
// rethrow promptly::broken_promise, so no waiter hangs.
#pragma once

#include <atomic>
#include <exception>
#include <utility>

#include "promptly/errors.hpp"
#include "promptly/future.hpp"

namespace promptly {

template <class T>
class promise {
 public:
  promise() : state_(new detail::future_state<T>(&destroy_state, nullptr, 1)) {}
  promise(promise&& o) noexcept : state_(std::exchange(o.state_, nullptr)), satisfied_(o.satisfied_.load()) {}
  promise& operator=(promise&& o) noexcept {
    if (this != &o) {
      abandon();
      state_ = std::exchange(o.state_, nullptr);
      satisfied_.store(o.satisfied_.load());
    }
    return *this;
  }
  promise(const promise&) = delete;
  promise& operator=(const promise&) = delete;
  ~promise() { abandon(); }

  // A handle to the shared state; may be called any number of times.
  future<T> get_future() const {
    if (state_ == nullptr) throw future_empty("promptly::promise::get_future on a moved-from promise");
    state_->add_ref();
    return future<T>(state_);
  }

  template <class... A>
  void set_value(A&&... a) {
    claim("set_value");
    try {
      if constexpr (!std::is_void_v<T>) state_->result.set_value(std::forward<A>(a)...);
      else state_->result.set_value();
    } catch (...) {
      state_->result.set_error(std::current_exception());
    }
    state_->complete();
  }

  void set_exception(std::exception_ptr e) {
    if (e == nullptr) throw std::invalid_argument("promptly::promise::set_exception with a null exception_ptr");
    claim("set_exception");
    state_->result.set_error(std::move(e));
    state_->complete();
  }

 private:
  static void destroy_state(detail::future_state_base* b) noexcept { delete static_cast<detail::future_state<T>*>(b); }

  void claim(const char* what) {
    if (state_ == nullptr) throw future_empty(std::string("promptly::promise::") + what + " on a moved-from promise");
    if (satisfied_.exchange(true, std::memory_order_acq_rel))
      throw promise_already_satisfied(std::string("promptly::promise::") + what + ": the promise already has a result");
  }

  void abandon() noexcept {
    if (state_ == nullptr) return;
    if (!satisfied_.exchange(true, std::memory_order_acq_rel)) {
      state_->result.set_error(std::make_exception_ptr(broken_promise("promptly::promise destroyed without a result")));
      state_->complete();
    }
    state_->release();
    state_ = nullptr;
  }

  detail::future_state<T>* state_;
  std::atomic<bool> satisfied_{false};
};

}  // namespace promptly
