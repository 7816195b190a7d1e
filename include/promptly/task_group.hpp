// task_group: spawn any number of tasks, then wait for all of them.
//
// spawn(f) pushes f as a task on the calling worker's deque (allocated from
// the worker's slab). wait() first runs the group's own unstolen children
// from the bottom of the caller's deque inline (LIFO, as Cilk's sync); when
// children are still running elsewhere it parks the caller's fiber until the
// last one finishes. Children may spawn more children into the same group.
//
// Exceptions: every child runs even if others throw (unless the group is
// cancelled); wait() rethrows the first exception recorded (in completion
// order) and discards the others. The destructor waits for unfinished
// children (they may reference the caller's frame) and then discards an
// exception nobody observed; call wait() to see it.
//
// Cancellation (oneTBB's task_group::cancel; cancellation.hpp): cancel(),
// from any thread or from a child, or a stop request on the token the group
// was constructed with, makes every child that has not started yet skip its
// callable; children that started run on (they may poll is_canceling()).
// wait() still waits for every child and then returns
// task_group_status::canceled, so skipped work is always reported. After
// wait() the group's own cancellation is cleared and the group may be
// reused. get_token() hands out a std::stop_token that is requested when the
// group is cancelled, for the algorithms (parallel_for(tg.get_token(), ...)),
// nested groups (task_group inner(tg.get_token())) and io:: operations.
//
// Invariants
//  * cancelled_ goes false -> true by cancel() and back only in wait(),
//    once every child finished; a child reads it (and the parent token)
//    once, before running its callable.
//  * token_source_ is created at most once per cancellation epoch (CAS);
//    wait() after a cancellation moves it to retired_, and only the
//    destructor frees sources (a concurrent cancel() may still use one). cancel()
//    stores cancelled_ and then loads token_source_, get_token() publishes
//    token_source_ and then loads cancelled_, both seq_cst, so at least one
//    of them sees the other and the token is requested.
#pragma once

#include <atomic>
#include <cassert>
#include <concepts>
#include <exception>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include <optional>
#include <stop_token>

#include "promptly/cancellation.hpp"
#include "promptly/detail/slab_allocator.hpp"
#include "promptly/detail/task.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/errors.hpp"
#include "promptly/pool.hpp"
#include "promptly/this_task.hpp"

namespace promptly {

// What task_group::wait() reports, as oneTBB's task_group_status.
enum class task_group_status {
  complete,  // every child ran
  canceled,  // the group was cancelled: children that had not started were skipped
};

class task_group {
 public:
  task_group() = default;
  // A group that is cancelled when `parent` is requested (as well as by cancel()).
  explicit task_group(cancellation_token parent) noexcept : parent_(std::move(parent)) {}
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  ~task_group() {
    drain();
    delete token_source_.load(std::memory_order_relaxed);
    while (retired_ != nullptr) delete std::exchange(retired_, retired_->next_retired);
  }

  // Children that have not started skip their callable; wait() returns canceled.
  // Any thread, any number of times.
  void cancel() noexcept {
    cancelled_.store(true, std::memory_order_seq_cst);
    if (linked_source* ls = token_source_.load(std::memory_order_seq_cst)) ls->source.request_stop();
  }

  // True once cancel() was called (until wait() returns) or the parent token was requested.
  [[nodiscard]] bool is_canceling() const noexcept {
    return cancelled_.load(std::memory_order_relaxed) || (parent_.stop_possible() && parent_.stop_requested());
  }

  // A token requested when this group is cancelled (or its parent token is).
  [[nodiscard]] cancellation_token get_token() {
    linked_source* ls = token_source_.load(std::memory_order_seq_cst);
    if (ls == nullptr) {
      auto* made = new linked_source(parent_);
      if (token_source_.compare_exchange_strong(ls, made, std::memory_order_seq_cst))
        ls = made;
      else
        delete made;  // another thread's source won
    }
    if (cancelled_.load(std::memory_order_seq_cst)) ls->source.request_stop();
    return ls->source.get_token();
  }

  // Must be called from a task running on a runtime (promptly::not_on_worker otherwise).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void spawn(F&& f) {
    spawn_at(nullptr, std::forward<F>(f));
  }

  // A child that runs in pool `at` or at a level (throws std::out_of_range
  // if the runtime has no such pool, pool_removed if it is being removed).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void spawn(pool at, F&& f) {
    spawn_at(&at, std::forward<F>(f));
  }

  // Waits for every spawned child; rethrows the first exception, else says
  // whether the group was cancelled (some children may then not have run).
  task_group_status wait() {
    drain();
    assert(pending_.ready() && "wait() returns only after every child finished");
    const bool was_cancelled = is_canceling();
    if (cancelled_.load(std::memory_order_relaxed)) {
      cancelled_.store(false, std::memory_order_relaxed);  // every child finished: nobody reads it now
      // A requested source cannot be reset: the next get_token() makes a new one. The old one
      // is kept until the destructor, since a cancel() racing with this wait() may still
      // reach it.
      if (linked_source* old = token_source_.exchange(nullptr, std::memory_order_seq_cst)) {
        old->next_retired = retired_;
        retired_ = old;
      }
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return was_cancelled ? task_group_status::canceled : task_group_status::complete;
  }

 private:
  template <class F>
  void spawn_at(const pool* at, F&& f) {
    detail::worker_view* w = detail::at_strand_boundary(detail::current_worker());  // spawn boundary
    if (w == nullptr) throw not_on_worker("promptly::task_group::spawn called outside a runtime's worker");
    const bool elsewhere = at != nullptr && at->id != w->pool;
    if (elsewhere) detail::check_pool(*w->sched, at->id);
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
    if (elsewhere)
      detail::make_ready(*w->sched, w, c, at->id);
    else
      detail::push_local(*w, c);
  }

  // Every child runs through one entry point, so that drain() can tell a
  // child of this group (execute == &execute_child, group == this) from any
  // other task at the bottom of the deque without knowing its type.
  struct child_base : detail::task {
    using run_fn = void (*)(child_base*);
    child_base(run_fn r, task_group* g) noexcept : task(&execute_child), run(r), group(g) {}
    static void execute_child(detail::task* t) {
      auto* self = static_cast<child_base*>(t);
      self->run(self);
    }
    run_fn run;
    task_group* group;
  };

  template <class F>
  struct child final : child_base {
    child(F&& f, task_group* g) : child_base(&run_child, g), fn(std::move(f)) {}
    static void run_child(child_base* base) {
      auto* self = static_cast<child*>(base);
      task_group* group = self->group;
      if (!group->is_canceling()) {
        try {
          std::invoke(self->fn);
        } catch (...) {
          group->record(std::current_exception());
        }
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
    // Run our own children from the bottom of the deque while they are
    // there. The sync is a strand boundary, and so is the start of each
    // child run inline: a worker reassigned (or asked to re-walk its set)
    // while draining a long run of short children must not wait for the
    // whole run to end.
    for (;;) {
      detail::worker_view* w = detail::at_strand_boundary(detail::current_worker());
      if (pending_.ready()) break;
      detail::task* t = w != nullptr ? w->deque->pop() : nullptr;
      if (t == nullptr) break;
      if (t->execute != &child_base::execute_child || static_cast<child_base*>(t)->group != this) {
        w->deque->push(t);
        break;
      }
      t->execute(t);
    }
    detail::wait_for(pending_);
    has_error_.store(false, std::memory_order_relaxed);
  }

  // The source behind get_token(), requested by cancel() and by the parent token.
  struct linked_source {
    struct request {
      std::stop_source* source;
      void operator()() const noexcept { source->request_stop(); }
    };
    explicit linked_source(const cancellation_token& parent) {
      if (parent.stop_possible()) link.emplace(parent, request{&source});
    }
    std::stop_source source;
    std::optional<std::stop_callback<request>> link;
    linked_source* next_retired = nullptr;  // the owner's list of sources replaced by wait()
  };

  detail::completion_counter pending_;
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_;
  cancellation_token parent_;
  std::atomic<bool> cancelled_{false};
  std::atomic<linked_source*> token_source_{nullptr};
  linked_source* retired_ = nullptr;  // the owner's thread only (wait, destructor)
};

}  // namespace promptly
