// parallel_invoke(f1, f2, ..., fn): runs every callable, possibly in parallel, and returns when
// all have finished (docs/algorithms.md). The callables are split in halves with join(), so
// n callables cost n - 1 joins and a span of log2(n) joins; every one runs as a strand of the
// caller's pool (level); outside any runtime they run on the default runtime
// (default_runtime.hpp). Results are discarded.
//
// Exceptions: as join(): every callable runs to its end, then the exception of the leftmost
// callable (in argument order) that threw propagates; the others are discarded.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <tuple>

#include "promptly/default_runtime.hpp"
#include "promptly/fork_join.hpp"

namespace promptly {

namespace detail {

template <std::size_t Lo, std::size_t Hi, class Tuple>
void invoke_slice(Tuple& fs) {
  if constexpr (Hi - Lo == 1) {
    std::invoke(std::get<Lo>(fs));
  } else {
    constexpr std::size_t mid = Lo + (Hi - Lo) / 2;
    join([&] { invoke_slice<Lo, mid>(fs); }, [&] { invoke_slice<mid, Hi>(fs); });
  }
}

}  // namespace detail

template <class... F>
  requires(sizeof...(F) >= 1 && (std::invocable<F&> && ...))
void parallel_invoke(F&&... fs) {
  auto refs = std::forward_as_tuple(fs...);  // lvalue references: each is invoked once, as an lvalue
  detail::run_data_parallel([&] { detail::invoke_slice<0, sizeof...(F)>(refs); });
}

}  // namespace promptly
