// The default runtime: the process-wide runtime that data-parallel calls (parallel_for,
// parallel_reduce, the sorts, the scans, parallel_invoke) use when they are called outside any
// runtime's worker, as Rayon's global pool. It starts on the first such call (or the first
// default_runtime()), with the configuration given to default_runtime_config beforehand, or a
// default runtime_config; it shuts down when static objects are destroyed at process exit
// (after main returns or exit()), waiting for the work it accepted, as ~runtime does.
//
//   promptly::default_runtime_config({.workers = 4});   // optional, before first use
//   promptly::parallel_sort(v);                          // from main: runs on the default runtime
//
//   promptly::sequential_region seq;                     // on this thread, while seq lives:
//   promptly::parallel_for(0, n, 64, body);              // outside a runtime, sequential, in order
//
// A call made from a task runs on that task's runtime, at its level, as before. The calling
// thread blocks until the call finishes (it is runtime::run of the whole call).
// Restrictions: exit() must not be called from a task of the default runtime (destroying a
// runtime from its own task terminates the process), and no thread may start a data-parallel
// call while the process exits; calls made after the default runtime shut down (from other
// static destructors) run sequentially on the caller.
#pragma once

#include "promptly/config.hpp"
#include <type_traits>

#include "promptly/detail/worker_view.hpp"

namespace promptly {

class runtime;

// Sets the default runtime's configuration. Throws std::logic_error if the default runtime has
// already started, and std::invalid_argument (validate()) for a bad configuration.
void default_runtime_config(runtime_config cfg);

// The default runtime, started on first use. Throws promptly::runtime_stopped after it shut
// down at process exit.
runtime& default_runtime();

// While an object of this class lives on a thread, data-parallel calls that thread makes
// outside any runtime run sequentially on it, in index order (what they all did before the
// default runtime existed). Nests; does not affect calls made from tasks.
class sequential_region {
 public:
  sequential_region() noexcept;
  ~sequential_region();
  sequential_region(const sequential_region&) = delete;
  sequential_region& operator=(const sequential_region&) = delete;
};

namespace detail {

// Runs fn(arg) on the default runtime and waits for it (rethrowing its exception); false,
// without running it, if the calling thread is in a sequential_region or the default runtime
// has shut down.
bool run_on_default_runtime(void (*fn)(void*), void* arg);

// How every data-parallel entry point runs its body f: inline on a worker (at the caller's
// pool), otherwise on the default runtime, or inline if that is not available.
template <class F>
void run_data_parallel(F&& f) {
  if (current_worker() == nullptr) {
    using Fn = std::remove_reference_t<F>;
    if (run_on_default_runtime([](void* p) { (*static_cast<Fn*>(p))(); }, &f)) return;
  }
  f();
}

}  // namespace detail

}  // namespace promptly
