// Coroutine tasks: promptly::co::task<T>, a C++20 coroutine that waits
// without a fiber (docs/coroutines.md).
//
//   promptly::co::task<std::size_t> echo(promptly::io::descriptor d) {
//     char buf[512];
//     std::size_t total = 0;
//     for (;;) {
//       std::size_t n = co_await promptly::io::read(d, buf);   // suspends; holds no stack
//       total += co_await promptly::io::write(d, {buf, n});
//     }
//   }
//   promptly::future<std::size_t> f = promptly::co::spawn(rt, promptly::level{1}, echo(std::move(d)));
//
// A task is lazy: calling the coroutine function allocates its frame and
// runs nothing. co::spawn makes it a task of a pool (or level) of a
// runtime and returns a future of its result; co_await of a task from
// another co::task runs it as a child in the parent's pool and returns its
// result. Inside a co::task, co_await works on
//   * promptly::future<U> (task futures, promises, every promptly::io
//     operation and timer): suspends until it is ready, then returns the
//     value (a reference to the shared value for an lvalue future, the
//     moved-out value for an rvalue) or rethrows its exception;
//   * co::task<U>: runs the child (symmetric transfer: a chain of children
//     that finish at once uses no stack);
//   * co::yield(): lets the other ready work of the pool run first;
//   * co::touch(ctx, typed_future) (promptly/co/typed.hpp): rule TOUCH,
//     checked at compile time as ctx::touch checks it.
// Anything else (a typed future without its ctx, a foreign awaitable whose
// resumption the scheduler would not see) does not compile.
//
// How it runs. A suspended coroutine is nothing but its frame: no fiber, no
// stack, no mapping, so the number of coroutines waiting at once is bounded
// by memory and descriptors, not by vm.max_map_count (src/sched/README.md,
// "Waiting when no stack can be mapped"). Resuming is an ordinary ready
// task: the frame carries a task record whose execute() resumes the
// coroutine, and whatever completes the awaited future (a worker, the I/O
// reactor, a promise on any thread) makes that record ready in the
// coroutine's pool through the scheduler's make-ready path, exactly as it
// makes a parked fiber's resume record ready. The workers, the policies,
// the pool's counts and shutdown treat it as any task: a spawned coroutine
// is counted in its pool from co::spawn until its frame is gone, so
// runtime shutdown and remove_pool wait for it.
//
// Invariants
//  * A coroutine is suspended at most once at a time, so one resume record
//    per frame suffices; it is made ready exactly once per suspension, by
//    the waker of the awaited event (future waiter protocol,
//    promptly/detail/waiting.hpp: wake() once per successful try_register).
//  * After a successful try_register, or after make_ready of the record,
//    await_suspend touches neither the awaiter nor the frame: another
//    worker may already be running the coroutine.
//  * sched and pool are set before the coroutine first runs (co::spawn for
//    a root, the parent's await for a child) and never change.
//  * A root's future state holds one reference for the coroutine; the
//    promise's destructor (the frame's end) publishes the result, or
//    promptly::broken_promise for a frame destroyed before it finished,
//    and then, if the coroutine was counted, uncounts it.
//  * Code after a suspension point may run on another thread: this header
//    reads the worker through reload_current_worker() (out of line) so
//    that no thread-local address is cached across a co_await.
#pragma once

#include <concepts>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "promptly/detail/job_result.hpp"
#include "promptly/detail/slab_allocator.hpp"
#include "promptly/detail/task.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/errors.hpp"
#include "promptly/future.hpp"
#include "promptly/pool.hpp"
#include "promptly/runtime.hpp"

namespace promptly::co {

template <class T = void>
class task;

namespace detail {

namespace pd = promptly::detail;

template <class T>
future<T> spawn_here(pd::worker_view* w, unsigned at_pool, task<T>&& t);
template <class T>
future<T> spawn_on(runtime& rt, pool at, task<T>&& t);
template <class T>
class promise_type_of;

// Awaiters that resume through the scheduler derive from this tag; only
// they (and futures and tasks) may be awaited in a co::task.
struct scheduled_awaiter {};

// What every co::task promise shares: the resume record, where it runs, the
// parent to continue, and frame allocation.
class promise_base {
 public:
  promise_base() noexcept = default;
  promise_base(const promise_base&) = delete;
  promise_base& operator=(const promise_base&) = delete;

  // Frames come from the calling worker's slab (per-size free lists; the
  // block header names its slab, so any thread may free it), or from the
  // heap outside workers and for frames over the slab's largest class.
  static void* operator new(std::size_t bytes) { return pd::slab_allocator::allocate(current_slab(), bytes); }
  static void operator delete(void* p) noexcept { pd::slab_allocator::deallocate(p, current_slab()); }

  std::suspend_always initial_suspend() noexcept { return {}; }

  // Makes the coroutine ready in its pool. `w`: the calling worker (its
  // deque is used when it serves that pool), or null to go through the
  // pool's injection queue (co::yield: behind the pool's other work).
  void make_ready(pd::worker_view* w) noexcept { pd::make_ready(*sched_, w, &resume_, pool_); }

  pd::scheduler* scheduler_of() const noexcept { return sched_; }
  unsigned pool_of() const noexcept { return pool_; }

 protected:
  template <class>
  friend class co::task;
  template <class>
  friend struct task_awaiter;
  template <class>
  friend struct final_awaiter;
  template <class U>
  friend future<U> spawn_here(pd::worker_view* w, unsigned at_pool, task<U>&& t);
  template <class U>
  friend future<U> spawn_on(runtime& rt, pool at, task<U>&& t);

  static pd::slab_allocator* current_slab() noexcept {
    pd::worker_view* w = pd::reload_current_worker();
    return w != nullptr ? w->slab : nullptr;
  }

  void place(pd::scheduler* s, unsigned pool) noexcept {
    sched_ = s;
    pool_ = pool;
  }

  struct resume_record final : pd::task {
    explicit resume_record(promise_base* o) noexcept : pd::task(&run), owner(o) {}
    // Executed by a worker of the coroutine's runtime, in its pool. The
    // body cannot throw out of resume(): the promise catches everything.
    static void run(pd::task* t) { static_cast<resume_record*>(t)->owner->self_.resume(); }
    promise_base* owner;
  };

  resume_record resume_{this};
  std::coroutine_handle<> self_;
  std::coroutine_handle<> continuation_;  // the awaiting parent; null for a root
  pd::scheduler* sched_ = nullptr;
  unsigned pool_ = 0;
  bool counted_ = false;  // counted in pool_ (a started root): uncount at the end
};

// co_await on a promptly::future<U>: registers itself as a waiter of the
// future's state (the protocol of promptly/detail/waiting.hpp) and makes the
// coroutine ready when woken. Holds a handle, so the state outlives the wait.
template <class U, bool Consume>
struct future_awaiter final : pd::waiter, scheduled_awaiter {
  explicit future_awaiter(future<U> f) : pd::waiter(&wake), handle(std::move(f)) {
    if (!handle.valid()) throw future_empty("promptly::co: co_await on a future with no state");
  }
  future_awaiter(future_awaiter&& o) noexcept : pd::waiter(&wake), handle(std::move(o.handle)) {}
  future_awaiter(const future_awaiter&) = delete;
  future_awaiter& operator=(const future_awaiter&) = delete;
  future_awaiter& operator=(future_awaiter&&) = delete;
  ~future_awaiter() = default;

  bool await_ready() const noexcept { return state()->ready(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    owner = &h.promise();
    // False: the future completed meanwhile; nobody will wake us, go on.
    return state()->try_register(this);
  }
  decltype(auto) await_resume() {
    pd::future_state<U>* s = state();
    if (s->result.failed()) std::rethrow_exception(s->result.error());
    if constexpr (std::is_void_v<U>)
      return;
    else if constexpr (Consume)
      return U(s->result.take());
    else
      return static_cast<const pd::stored_t<U>&>(s->result.value());
  }

  static void wake(pd::waiter* w) noexcept {
    // The last access to the awaiter and the frame: the record may run at once.
    static_cast<future_awaiter*>(w)->owner->make_ready(pd::reload_current_worker());
  }

  pd::future_state<U>* state() const noexcept { return pd::future_access::state(handle); }

  future<U> handle;
  promise_base* owner = nullptr;
};

template <class U>
struct task_awaiter : scheduled_awaiter {
  using handle_type = std::coroutine_handle<typename task<U>::promise_type>;
  handle_type child;

  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
    auto& cp = child.promise();
    const promise_base& pp = parent.promise();
    cp.continuation_ = parent;
    cp.place(pp.sched_, pp.pool_);  // a child runs in its parent's pool
    return child;                   // symmetric transfer: no stack grows
  }
  U await_resume() {
    if constexpr (std::is_void_v<U>)
      (void)child.promise().result_.take();
    else
      return child.promise().result_.take();
  }
};

template <class T>
struct final_awaiter {
  // A root runs off its end (the frame is destroyed and its promise's
  // destructor publishes the result); a child suspends and continues its
  // parent, which reads the result and then destroys the child.
  bool await_ready() const noexcept { return continuation == nullptr; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<>) const noexcept { return continuation; }
  void await_resume() const noexcept {}
  std::coroutine_handle<> continuation;
};

template <class T>
class promise_type_of : public promise_base {
 public:
  promise_type_of() noexcept = default;
  promise_type_of(const promise_type_of&) = delete;
  promise_type_of& operator=(const promise_type_of&) = delete;
  ~promise_type_of() {
    if (root_ == nullptr) return;
    if (!finished_)
      root_->result.set_error(
          std::make_exception_ptr(broken_promise("promptly::co::task destroyed before it finished")));
    else
      root_->result = std::move(result_);
    pd::scheduler* s = sched_;
    const unsigned pool = pool_;
    const bool counted = counted_;
    root_->complete();
    root_->release();
    if (counted) pd::count_detached_finished(*s, pool);
  }

  task<T> get_return_object() noexcept;
  final_awaiter<T> final_suspend() noexcept { return {continuation_}; }
  void unhandled_exception() noexcept {
    result_.set_error(std::current_exception());
    finished_ = true;
  }

  template <class U>
  auto await_transform(const future<U>& f) {
    return future_awaiter<U, false>(f);
  }
  template <class U>
  auto await_transform(future<U>&& f) {
    return future_awaiter<U, true>(std::move(f));
  }
  template <class U>
  task_awaiter<U> await_transform(task<U>&& t) {
    return {{}, t.take_for_await()};
  }
  template <class U>
  task_awaiter<U> await_transform(task<U>& t) {
    return {{}, t.take_for_await()};
  }
  template <class A>
    requires std::derived_from<std::remove_cvref_t<A>, scheduled_awaiter>
  A&& await_transform(A&& a) noexcept {
    return std::forward<A>(a);
  }

 protected:
  template <class>
  friend class co::task;
  template <class>
  friend struct task_awaiter;
  template <class U>
  friend future<U> spawn_here(pd::worker_view* w, unsigned at_pool, task<U>&& t);
  template <class U>
  friend future<U> spawn_on(runtime& rt, pool at, task<U>&& t);

  pd::job_result<T> result_;
  bool finished_ = false;
  pd::future_state<T>* root_ = nullptr;  // the spawned task's future state (one reference)
};

template <class T>
class promise_of : public promise_type_of<T> {
 public:
  template <class V>
    requires std::convertible_to<V&&, T>
  void return_value(V&& v) {
    this->result_.set_value(std::forward<V>(v));
    this->finished_ = true;
  }
};
template <>
class promise_of<void> : public promise_type_of<void> {
 public:
  void return_void() noexcept {
    result_.set_value();
    finished_ = true;
  }
};

template <class T>
void destroy_root_state(pd::future_state_base* b) noexcept {
  delete static_cast<pd::future_state<T>*>(b);
}

// The future a spawned task completes; refs: the returned handle.
template <class T>
pd::future_state<T>* new_root_state() {
  return new pd::future_state<T>(&destroy_root_state<T>, nullptr, 1);
}

}  // namespace detail

// A lazily started coroutine task; move-only. Destroying a task that was
// never spawned or awaited destroys its frame (its parameters) and runs
// nothing. A task can be spawned or awaited once.
template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::promise_of<T>;
  using value_type = T;

  task() noexcept = default;
  task(task&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  task& operator=(task o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~task() {
    if (h_) h_.destroy();
  }

  // False once spawned, moved from, or default-constructed.
  bool valid() const noexcept { return static_cast<bool>(h_); }

 private:
  template <class>
  friend class detail::promise_type_of;
  template <class U>
  friend future<U> detail::spawn_here(promptly::detail::worker_view* w, unsigned at_pool, task<U>&& t);
  template <class U>
  friend future<U> detail::spawn_on(runtime& rt, pool at, task<U>&& t);

  explicit task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}

  void require(const char* what) const {
    if (!h_) throw future_empty(std::string("promptly::co::") + what + " of a task that holds no coroutine (moved from, spawned already, or default)");
  }
  // Awaiting borrows the frame (this task still destroys it); a task whose
  // coroutine finished already, or runs, cannot be awaited again.
  std::coroutine_handle<promise_type> take_for_await() {
    require("co_await");
    if (h_.promise().continuation_ || h_.done())
      throw std::logic_error("promptly::co: co_await of a task that was awaited already");
    return h_;
  }
  std::coroutine_handle<promise_type> release(const char* what) {
    require(what);
    return std::exchange(h_, nullptr);
  }

  std::coroutine_handle<promise_type> h_;
};

namespace detail {

template <class T>
task<T> promise_type_of<T>::get_return_object() noexcept {
  auto h = std::coroutine_handle<promise_of<T>>::from_promise(static_cast<promise_of<T>&>(*this));
  self_ = h;
  return task<T>(h);
}

// Spawns from worker `w` of the runtime into `pool`: counted like async,
// then made ready (pushed on w's deque when w serves the pool).
template <class T>
future<T> spawn_here(pd::worker_view* w, unsigned at_pool, task<T>&& t) {
  t.require("spawn");
  pd::future_state<T>* st = new_root_state<T>();
  future<T> result = pd::future_access::adopt(st);
  const bool local = w->pool == at_pool;
  if (local)
    pd::count_detached_started(*w->sched, at_pool);
  else
    pd::admit(*w->sched, at_pool, pd::admission::from_task);  // throws, counting nothing, for a bad at_pool
  auto h = t.release("spawn");
  auto& p = h.promise();
  st->add_ref();
  p.root_ = st;
  p.counted_ = true;
  p.place(w->sched, at_pool);
  if (local)
    pd::push_local(*w, &p.resume_);
  else
    pd::make_ready(*w->sched, w, &p.resume_, at_pool);
  return result;
}

// Spawns from any thread: a starter task submitted to `at` (so the
// runtime checks the pool and its state as for any submission) counts the
// coroutine in its pool and runs it until its first suspension.
template <class T>
future<T> spawn_on(runtime& rt, pool at, task<T>&& t) {
  t.require("spawn");
  pd::future_state<T>* st = new_root_state<T>();
  future<T> result = pd::future_access::adopt(st);
  st->add_ref();
  t.h_.promise().root_ = st;  // from here on the frame's end publishes into st
  (void)rt.submit(at, [body = std::move(t)]() mutable {
    auto h = body.release("spawn");
    pd::worker_view* w = pd::reload_current_worker();
    auto& p = h.promise();
    pd::count_detached_started(*w->sched, w->pool);  // the starter, counted and running, holds the pool
    p.counted_ = true;
    p.place(w->sched, w->pool);
    h.resume();
  });
  return result;
}

}  // namespace detail

// Spawns `t` as a task of pool (or level) `at` of `rt` from any thread and
// returns the future of its result. Throws what runtime::submit throws
// (std::out_of_range, pool_removed, runtime_stopped); the task is then
// destroyed unrun.
template <class T>
[[nodiscard]] future<T> spawn(runtime& rt, pool at, task<T> t) {
  return detail::spawn_on(rt, at, std::move(t));
}
template <class T>
[[nodiscard]] future<T> spawn(runtime& rt, task<T> t) {
  return detail::spawn_on(rt, pool{0}, std::move(t));
}

// From a task or coroutine of a runtime: spawns `t` in pool `at` of the
// same runtime (or the caller's pool). Throws promptly::not_on_worker
// elsewhere.
template <class T>
[[nodiscard]] future<T> spawn(pool at, task<T> t) {
  promptly::detail::worker_view* w = promptly::detail::at_strand_boundary(promptly::detail::reload_current_worker());
  if (w == nullptr)
    throw not_on_worker("promptly::co::spawn(pool, task) called outside a runtime's worker; use co::spawn(runtime&, ...)");
  return detail::spawn_here(w, at.id, std::move(t));
}
template <class T>
[[nodiscard]] future<T> spawn(task<T> t) {
  promptly::detail::worker_view* w = promptly::detail::at_strand_boundary(promptly::detail::reload_current_worker());
  if (w == nullptr)
    throw not_on_worker("promptly::co::spawn(task) called outside a runtime's worker; use co::spawn(runtime&, ...)");
  return detail::spawn_here(w, w->pool, std::move(t));
}

// co_await co::yield(): the coroutine goes behind the ready work of its
// pool (its record enters the pool's injection queue), so a long
// computation in a coroutine lets others run. Only in a co::task.
struct yield_awaiter : detail::scheduled_awaiter {
  bool await_ready() const noexcept { return false; }
  template <class P>
  void await_suspend(std::coroutine_handle<P> h) const noexcept {
    h.promise().make_ready(nullptr);
  }
  void await_resume() const noexcept {}
};
[[nodiscard]] inline yield_awaiter yield() noexcept { return {}; }

}  // namespace promptly::co
