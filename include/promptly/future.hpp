// Futures: promptly::async(f) returns a promptly::future<T>.
//
// A future is a shared handle (copyable, like std::shared_future) to the
// state of one task. Handles may be stored anywhere, including shared data
// structures, and touched by any task or thread. get() returns the value, or
// rethrows the task's exception, in every handle that touches it.
//
// Touching an unfinished future:
//  * if the task has not started yet, get() runs it inline on the caller's
//    stack (it is the very task being waited for, not an unrelated one),
//    while the stack has room to spare (else as below);
//  * otherwise the caller's fiber parks and its worker runs other work on
//    another fiber; the task's completion makes the fiber ready again.
// Outside a worker, get() blocks the calling thread.
//
// Invariants
//  * `claimed` decides who runs the body: the deque's copy of the task or a
//    get() that finds it unstarted; exactly one exchange(true) wins.
//  * refs counts the handles plus one for the queued task record; the
//    state is destroyed (returned to its slab) when refs reaches zero,
//    never nested inside another state's destruction on the same fiber
//    (destroy_released), so dropping a chain of any length takes constant
//    stack.
//  * waiters is 0 (none), ready_tag (done; set once, never reset), or the
//    head of an intrusive list of parked waiters; once refs is zero it
//    links the state into its fiber's queue of states to destroy.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include "promptly/detail/job_result.hpp"
#include "promptly/detail/task.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/errors.hpp"
#include "promptly/pool.hpp"
#include "promptly/this_task.hpp"

namespace promptly {

template <class T>
class future;
template <class T>
class promise;

namespace detail {

// Typed priorities and inversion checks (docs/typed-priorities.md):
// touch_observer: null unless some runtime was built with
// runtime_config::detect_inversions; then every touch from a worker of a
// future computed by a task reports (toucher's worker, touched task) to it
// (include/promptly/typed/inversion_detector.hpp). Off, it costs one relaxed
// load and a branch per touch.
using touch_observer_fn = void (*)(const worker_view& toucher, const task& touched) noexcept;
inline std::atomic<touch_observer_fn> touch_observer{nullptr};

// Handle <-> state pointer, for atomic future cells (promptly/future_cell.hpp)
// and typed task creation: adopt() takes over one reference, release() gives
// the handle's reference up to the caller.
template <class T>
struct future_state;
struct future_access {
  template <class T>
  static future_state<T>* state(const future<T>& f) noexcept { return f.state_; }
  template <class T>
  static future_state<T>* release(future<T>&& f) noexcept { return std::exchange(f.state_, nullptr); }
  template <class T>
  static future<T> adopt(future_state<T>* s) noexcept { return future<T>(s); }
};

// Destroys a state whose last reference was just released, without
// nesting destructions: destroying a state can release the last reference
// to another (an async task's closure captures the previous future of a
// chain; a value holds a future), and a chain of n states would otherwise
// nest n destructors on one stack. The first call on a fiber (or thread)
// destroys states in a loop; a call made from inside that loop's destroy
// only queues its state there, linked through `waiters` (unused once no
// handle is left). Out of line (src/sched/fiber_stack.cpp): the queue is
// per fiber and travels with it across switches.
struct future_state_base;
void destroy_released(future_state_base* s) noexcept;

// False when the calling fiber's stack is too close to full to run another
// task inline (src/sched/fiber_stack.cpp states the rule); get() then parks
// and the runtime runs the task on a fresh fiber. Out of line: only the
// inline path calls it.
bool stack_allows_inline_run() noexcept;

struct future_state_base {
  static constexpr std::uintptr_t ready_tag = 1;
  using destroy_fn = void (*)(future_state_base*) noexcept;
  using run_fn = void (*)(future_state_base*) noexcept;

  future_state_base(destroy_fn d, run_fn r, std::uint32_t initial_refs) noexcept
      : refs(initial_refs), destroy(d), run_claimed(r) {}

  bool ready() const noexcept { return waiters.load(std::memory_order_acquire) == ready_tag; }

  bool try_register(waiter* w) noexcept {
    std::uintptr_t head = waiters.load(std::memory_order_acquire);
    do {
      if (head == ready_tag) return false;
      w->next = reinterpret_cast<waiter*>(head);
      // Release: w's fields are visible to the completer that takes the list.
    } while (!waiters.compare_exchange_weak(head, reinterpret_cast<std::uintptr_t>(w), std::memory_order_acq_rel,
                                            std::memory_order_acquire));
    return true;
  }

  // Publishes the outcome and wakes every registered waiter.
  void complete() noexcept {
    std::uintptr_t head = waiters.exchange(ready_tag, std::memory_order_acq_rel);
    for (auto* w = reinterpret_cast<waiter*>(head); w != nullptr;) {
      waiter* next = w->next;  // read before wake: waking may end w's lifetime
      w->wake(w);
      w = next;
    }
  }

  void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    // Acq_rel: the last releaser sees every other handle's accesses.
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy_released(this);
  }

  void wait() {
    worker_view* w = at_strand_boundary(current_worker());  // touch boundary
    if (touch_observer_fn observe = touch_observer.load(std::memory_order_relaxed)) [[unlikely]]  // inversion detector
      if (w != nullptr && queued_task != nullptr) observe(*w, *queued_task);
    if (ready()) return;
    // Only a worker of the task's own runtime, serving the task's level, may
    // run it inline, and only with stack to spare (a chain of gets would
    // otherwise nest without bound); any other caller waits for the runtime
    // to run it.
    if (run_claimed != nullptr && w != nullptr && w->sched == sched && queued_task->pool == w->pool &&
        !claimed.load(std::memory_order_relaxed) && stack_allows_inline_run()) {
      // The awaited task is most often the newest item of the caller's own
      // deque: take it back so it leaves no spent record behind.
      task* t = w->deque->pop();
      if (t == queued_task) {
        const bool won = !claimed.exchange(true, std::memory_order_acq_rel);
        if (won) run_claimed(this);
        release();  // the reference the queue held; the caller's handle keeps *this alive
        if (won) return;
      } else {
        if (t != nullptr) w->deque->push(t);
        if (!claimed.exchange(true, std::memory_order_acq_rel)) {
          run_claimed(this);
          return;
        }
      }
    }
    wait_for(*this);
  }

  std::atomic<std::uint32_t> refs;
  std::atomic<std::uintptr_t> waiters{0};
  std::atomic<bool> claimed{false};
  destroy_fn destroy;
  run_fn run_claimed;  // null when the state has no body to run inline
  task* queued_task = nullptr;  // the record queued for this state, if any
  scheduler* sched = nullptr;    // the runtime that runs queued_task
};

template <class T>
struct future_state : future_state_base {
  using future_state_base::future_state_base;
  job_result<T> result;
};

// async's record: the queued task and the future state in one slab block.
template <class T, class F>
struct async_task final : task, future_state<T> {
  async_task(F&& f, scheduler* s) : task(&execute_queued), future_state<T>(&destroy_self, &run_body, 2), fn(std::move(f)) {
    this->queued_task = this;
    this->sched = s;
  }

  static void run_body(future_state_base* b) noexcept {
    auto* self = static_cast<async_task*>(b);
    self->result.run(self->fn);
    scheduler* s = self->sched;  // read before complete(): waking may release *self
    const unsigned pool = self->pool;
    self->complete();
    count_detached_finished(*s, pool);
  }
  static void execute_queued(task* t) {
    auto* self = static_cast<async_task*>(t);
    if (!self->claimed.exchange(true, std::memory_order_acq_rel)) run_body(self);
    self->release();  // the queue's reference
  }
  static void destroy_self(future_state_base* b) noexcept {
    auto* self = static_cast<async_task*>(b);
    self->~async_task();
    worker_view* w = current_worker();
    slab_allocator::deallocate(self, w != nullptr ? w->slab : nullptr);
  }

  F fn;
};


// Allocates an async task from `slab` (null: global heap).
template <class T, class F>
async_task<T, std::decay_t<F>>* new_async_task(slab_allocator* slab, scheduler& s, F&& f) {
  using A = async_task<T, std::decay_t<F>>;
  if constexpr (alignof(A) > 16) slab = nullptr;  // slab blocks are 16-byte aligned
  void* mem = slab_allocator::allocate(slab, sizeof(A));
  try {
    return new (mem) A(std::decay_t<F>(std::forward<F>(f)), &s);
  } catch (...) {
    slab_allocator::deallocate(mem, slab);
    throw;
  }
}

struct no_hook {
  template <class S>
  void operator()(S*) const noexcept {}
};

// The one path that starts a counted task (runtime::submit, async, typed
// fcreate): admit it to `pool` (throws, counting nothing, for an unknown or
// closing pool, or, `from` outside, a stopped runtime; a task starting work
// in its own pool is not checked: it holds the pool open), make its record, let `before_ready`
// see the state (typed fcreate publishes the handle there, before anyone
// can run the task), then make it ready: pushed on the calling worker's
// deque when it serves that pool, else injected. `w` is the calling worker
// of any runtime, or null.
template <class T, class F, class BeforeReady = no_hook>
future_state<T>* start_async(scheduler& s, worker_view* w, unsigned pool, admission from, F&& f,
                             BeforeReady&& before_ready = {}) {
  const bool local = w != nullptr && w->sched == &s;
  if (from == admission::from_task && local && w->pool == pool)
    count_detached_started(s, pool);
  else
    admit(s, pool, local ? from : admission::from_outside);
  async_task<T, std::decay_t<F>>* a;
  try {
    a = new_async_task<T>(local ? w->slab : nullptr, s, std::forward<F>(f));
  } catch (...) {
    count_detached_finished(s, pool);
    throw;
  }
  before_ready(static_cast<future_state<T>*>(a));
  if (local && w->pool == pool)
    push_local(*w, a);
  else
    make_ready(s, w, a, pool);
  return a;
}

}  // namespace detail

template <class T>
class future {
 public:
  using value_type = T;

  future() noexcept = default;
  future(const future& o) noexcept : state_(o.state_) {
    if (state_) state_->add_ref();
  }
  future(future&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  future& operator=(future o) noexcept {
    std::swap(state_, o.state_);
    return *this;
  }
  ~future() {
    if (state_) state_->release();
  }

  bool valid() const noexcept { return state_ != nullptr; }
  // True once the value or exception is available (get() will not wait).
  bool is_ready() const noexcept { return state_ != nullptr && state_->ready(); }

  // Waits, then returns the value or rethrows the task's exception.
  // Lvalue get() returns a reference to the shared value (every handle sees
  // the same object). Rvalue get() moves the value out: other handles to the
  // same state then observe a moved-from object.
  const detail::stored_t<T>& get() const& {
    wait();
    if (state_->result.failed()) std::rethrow_exception(state_->result.error());
    return state_->result.value();
  }
  T get() && { return get_consuming(); }
  void wait() const {
    if (!state_) throw future_empty("promptly::future::get/wait on a future with no state");
    state_->wait();
  }

 private:
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  friend auto async(F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>>;
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  friend auto async(pool at, F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>>;
  friend class runtime;
  template <class U>
  friend class promise;
  friend struct detail::future_access;  // future cells, typed task creation
  T get_consuming() {
    wait();
    if constexpr (std::is_void_v<T>) {
      state_->result.take();
    } else {
      return state_->result.take();
    }
  }
  explicit future(detail::future_state<T>* s) noexcept : state_(s) {}
  detail::future_state<T>* state_ = nullptr;
};

// Runs f as a new task on the calling worker's runtime, in the caller's
// pool, and returns its future. Must be called from a task (throws
// promptly::not_on_worker otherwise; use runtime::submit from other threads).
template <class F>
  requires std::invocable<std::decay_t<F>&>
[[nodiscard]] auto async(F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
  using T = std::invoke_result_t<std::decay_t<F>&>;
  detail::worker_view* w = detail::at_strand_boundary(detail::current_worker());  // create boundary
  if (w == nullptr)
    throw not_on_worker("promptly::async called outside a runtime's worker; use runtime::submit from other threads");
  return future<T>(detail::start_async<T>(*w->sched, w, w->pool, detail::admission::from_task, std::forward<F>(f)));
}

// async in another pool or at another level: the task is made ready there
// (throws std::out_of_range if the runtime has no such pool, pool_removed
// if it is being removed).
template <class F>
  requires std::invocable<std::decay_t<F>&>
[[nodiscard]] auto async(pool at, F&& f) -> future<std::invoke_result_t<std::decay_t<F>&>> {
  using T = std::invoke_result_t<std::decay_t<F>&>;
  detail::worker_view* w = detail::at_strand_boundary(detail::current_worker());
  if (w == nullptr)
    throw not_on_worker("promptly::async called outside a runtime's worker; use runtime::submit from other threads");
  return future<T>(detail::start_async<T>(*w->sched, w, at.id, detail::admission::from_task, std::forward<F>(f)));
}

}  // namespace promptly
