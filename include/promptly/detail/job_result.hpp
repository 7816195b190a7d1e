// Storage for the outcome of a callable: a value, nothing (void), or an
// exception. Shared by join's stack jobs and by future states.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "promptly/nothing.hpp"

namespace promptly {

namespace detail {

template <class T>
using stored_t = std::conditional_t<std::is_void_v<T>, nothing, T>;

template <class T>
class job_result {
 public:
  template <class F>
  void run(F& f) noexcept {
    try {
      if constexpr (std::is_void_v<T>) {
        std::invoke(f);
        value_.emplace();
      } else {
        value_.emplace(std::invoke(f));
      }
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  template <class... A>
  void set_value(A&&... a) {
    value_.emplace(std::forward<A>(a)...);
  }
  void set_error(std::exception_ptr e) noexcept { error_ = std::move(e); }
  bool failed() const noexcept { return error_ != nullptr; }
  const std::exception_ptr& error() const noexcept { return error_; }
  stored_t<T>& value() noexcept { return *value_; }
  stored_t<T> take() {
    if (error_) std::rethrow_exception(error_);
    return std::move(*value_);
  }

 private:
  std::optional<stored_t<T>> value_;
  std::exception_ptr error_;
};

}  // namespace detail
}  // namespace promptly
