// task_group: spawn any number of tasks, then wait for all of them.
//
// spawn(f) pushes f as a task on the calling worker's deque (allocated from
// the worker's slab). wait() first runs the group's own unstolen children
// from the bottom of the caller's deque inline (LIFO, as Cilk's sync); when
// children are still running elsewhere it parks the caller's fiber until the
// last one finishes. Children may spawn more children into the same group.
//
// Exceptions: every child runs even if others throw; wait() rethrows the
// first exception recorded (in completion order) and discards the others.
// The destructor waits for unfinished children (they may reference the
// caller's frame) and then discards an exception nobody observed; call
// wait() to see it.
#pragma once

#include <atomic>
#include <concepts>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#include "promptly/detail/slab_allocator.hpp"
#include "promptly/detail/task.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/errors.hpp"
#include "promptly/level.hpp"

namespace promptly {

class task_group {
 public:
  task_group() = default;
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  ~task_group() {
    drain();
  }

  // Must be called from a task running on a runtime (promptly::not_on_worker otherwise).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void spawn(F&& f) {
    spawn_at(nullptr, std::forward<F>(f));
  }

  // A child that runs at level `at` (throws std::out_of_range if the
  // runtime has no such level).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void spawn(level at, F&& f) {
    spawn_at(&at, std::forward<F>(f));
  }

  // Waits for every spawned child; rethrows the first exception.
  void wait() {
    drain();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  template <class F>
  void spawn_at(const level* at, F&& f) {
    detail::worker_view* w = detail::at_strand_boundary(detail::current_worker());  // spawn boundary
    if (w == nullptr) throw not_on_worker("promptly::task_group::spawn called outside a runtime's worker");
    const bool elsewhere = at != nullptr && at->value != w->level;
    if (elsewhere) detail::check_level(*w->sched, at->value);
    using C = child<std::decay_t<F>>;
    detail::slab_allocator* slab = alignof(C) > 16 ? nullptr : w->slab;
    void* mem = detail::slab_allocator::allocate(slab, sizeof(C));
    C* c;
    try {
      c = new (mem) C(std::forward<F>(f), this);
    } catch (...) {
      detail::slab_allocator::deallocate(mem, slab);
      throw;
    }
    pending_.add();
    if (elsewhere) {
      c->level = at->value;
      detail::schedule_ready(*w->sched, c);
    } else {
      detail::push_local(*w, c);
    }
  }

  template <class F>
  struct child final : detail::task {
    child(F&& f, task_group* g) : task(&execute, g), fn(std::move(f)) {}
    static void execute(detail::task* t) {
      auto* self = static_cast<child*>(t);
      auto* group = static_cast<task_group*>(const_cast<void*>(self->group));
      try {
        std::invoke(self->fn);
      } catch (...) {
        group->record(std::current_exception());
      }
      self->~child();
      detail::worker_view* w = detail::current_worker();
      detail::slab_allocator::deallocate(self, w != nullptr ? w->slab : nullptr);
      group->pending_.arrive();  // last access to the group
    }
    F fn;
  };

  void record(std::exception_ptr e) noexcept {
    if (!has_error_.exchange(true, std::memory_order_acq_rel)) error_ = std::move(e);
  }

  void drain() {
    detail::at_strand_boundary(detail::current_worker());  // sync boundary
    // Run our own children from the bottom of the deque while they are there.
    while (!pending_.ready()) {
      detail::worker_view* w = detail::current_worker();
      detail::task* t = w != nullptr ? w->deque->pop() : nullptr;
      if (t == nullptr) break;
      if (t->group != this) {
        w->deque->push(t);
        break;
      }
      t->execute(t);
    }
    detail::wait_for(pending_);
    has_error_.store(false, std::memory_order_relaxed);
  }

  detail::completion_counter pending_;
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_;
};

}  // namespace promptly
