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
#include <cassert>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

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

// Why park_until returned.
enum class wake_reason { ready, stopped, timed_out };
// Parks the calling fiber (blocks the calling thread outside a worker) until s is ready,
// `stop` is requested, or *deadline (if given) passes, whichever comes first; a null s is
// ready. The deadline is an io:: timer of the reactor (src/io/timed_wait.cpp): the wait
// neither spins nor holds a thread.
wake_reason park_until(future_state_base* s, const std::chrono::steady_clock::time_point* deadline,
                       const std::stop_token& stop);

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

// What future::wait_for and wait_until report (std::future_status without `deferred`: a
// Promptly task is never deferred; an unstarted one runs while the caller waits).
enum class future_status { ready, timeout };

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

  // Waits until the future is ready or `d` has passed. The caller's fiber parks (its worker
  // runs other work; outside a worker the thread blocks) on the reactor's timer queue, as
  // io::sleep_for does: no spinning, no thread per wait. Unlike get(), it never runs the
  // task inline: the task runs on the runtime meanwhile. A wait that times out leaves a
  // small record (tens of bytes) on the future until it completes.
  template <class Rep, class Period>
  future_status wait_for(const std::chrono::duration<Rep, Period>& d) const {
    using clock = std::chrono::steady_clock;
    const auto now = clock::now();
    const auto room = clock::time_point::max() - now;
    if (d <= d.zero()) return wait_until_steady(now);
    // Compared in floating point: a duration of another period (hours::max()) would
    // overflow the conversion to nanoseconds.
    if (std::chrono::duration<double>(d) >= std::chrono::duration<double>(room - std::chrono::seconds(1)))
      return wait_until_steady(clock::time_point::max());
    return wait_until_steady(now + std::chrono::ceil<clock::duration>(d));
  }
  template <class Clock, class Duration>
  future_status wait_until(const std::chrono::time_point<Clock, Duration>& t) const {
    if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>)
      return wait_until_steady(std::chrono::time_point_cast<std::chrono::steady_clock::duration>(t));
    else
      return wait_for(t - Clock::now());  // another clock: its remaining time on the steady clock
  }

  // A continuation: a task that runs f once this future is ready (on any thread that
  // completes it, the continuation is made ready, never run there). f takes the ready
  // future<T> (it may then get() the value or the exception), or the value (const T&; nothing
  // for future<void>), in which case an exception of this future skips f and becomes the
  // continuation's. Returns the continuation's future.
  //
  // It runs at the caller's level (pool), or at `at`. Called from a task it runs on that
  // task's runtime; called elsewhere, on the runtime that computes this future (throws
  // promptly::not_on_worker for a promise's future, which no runtime computes). Throws as
  // async(at, ...) does for an unknown or removed pool. The runtime counts the continuation
  // from this call on (shutdown and remove_pool wait for it, so its antecedent must complete).
  template <class F>
  auto then(F&& f) const {
    return then_at(nullptr, std::forward<F>(f));
  }
  template <class F>
  auto then(pool at, F&& f) const {
    return then_at(&at, std::forward<F>(f));
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

  future_status wait_until_steady(std::chrono::steady_clock::time_point t) const {
    if (!state_) throw future_empty("promptly::future::wait_for/wait_until on a future with no state");
    detail::at_strand_boundary(detail::current_worker());  // touch boundary
    return detail::park_until(state_, &t, std::stop_token{}) == detail::wake_reason::ready ? future_status::ready
                                                                                          : future_status::timeout;
  }

  template <class F>
  auto then_at(const pool* at, F&& f) const;

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

// ---- continuations and combinators (docs/futures.md) ----

namespace detail {

// Makes a continuation's task ready when its antecedent completes, from whichever thread
// completes it (a worker of any runtime, the reactor, a promise's thread).
struct continuation_hook final : waiter {
  continuation_hook() noexcept : waiter(&on_complete) {}
  static void on_complete(waiter* w) noexcept {
    auto* self = static_cast<continuation_hook*>(w);
    make_ready(*self->sched, current_worker(), self->t, self->pool);
    delete self;
  }
  scheduler* sched = nullptr;
  task* t = nullptr;
  unsigned pool = 0;
};

template <class T, class F>
struct continuation_result {
  using type = std::invoke_result_t<F&, future<T>>;
};
template <class T, class F>
  requires(!std::invocable<F&, future<T>>)
struct continuation_result<T, F> {
  using type = typename std::conditional_t<std::is_void_v<T>, std::invoke_result<F&>,
                                          std::invoke_result<F&, const stored_t<T>&>>::type;
};

template <class T, class F>
concept continuation_for = std::invocable<F&, future<T>> || (std::is_void_v<T> && std::invocable<F&>) ||
                           (!std::is_void_v<T> && std::invocable<F&, const stored_t<T>&>);

// Calls a continuation with its (ready) antecedent or the antecedent's value.
template <class T, class F>
decltype(auto) call_continuation(F& f, future<T>& ante) {
  if constexpr (std::invocable<F&, future<T>>)
    return std::invoke(f, std::move(ante));
  else if constexpr (std::is_void_v<T>) {
    ante.get();
    return std::invoke(f);
  } else
    return std::invoke(f, ante.get());
}

// start_async for a task that becomes ready only when `ante` completes: counted from now,
// allocated now, made ready by a continuation_hook. Before that, only a get() of its own
// future at its pool may run it (future_state_base::wait); its body then waits for `ante`.
template <class U, class F>
future_state<U>* start_continuation(scheduler& s, worker_view* w, unsigned pool, admission from,
                                    future_state_base& ante, F&& body) {
  auto hook = std::make_unique<continuation_hook>();
  const bool local = w != nullptr && w->sched == &s;
  if (from == admission::from_task && local && w->pool == pool)
    count_detached_started(s, pool);
  else
    admit(s, pool, local ? from : admission::from_outside);
  async_task<U, std::decay_t<F>>* a;
  try {
    a = new_async_task<U>(local ? w->slab : nullptr, s, std::forward<F>(body));
  } catch (...) {
    count_detached_finished(s, pool);
    throw;
  }
  a->pool = static_cast<std::uint16_t>(pool);
  hook->sched = &s;
  hook->t = a;
  hook->pool = pool;
  if (ante.try_register(hook.get())) {
    hook.release();  // frees itself when it fires
  } else if (local && w->pool == pool) {
    push_local(*w, a);
  } else {
    make_ready(s, w, a, pool);
  }
  return a;
}

}  // namespace detail

template <class T>
template <class F>
auto future<T>::then_at(const pool* at, F&& f) const {
  static_assert(detail::continuation_for<T, std::decay_t<F>>,
                "promptly::future<T>::then(f): f must take the ready future<T>, or its value as const T& "
                "(nothing for future<void>)");
  using U = typename detail::continuation_result<T, std::decay_t<F>>::type;
  if (!state_) throw future_empty("promptly::future::then on a future with no state");
  detail::worker_view* w = detail::at_strand_boundary(detail::current_worker());  // create boundary
  detail::scheduler* s;
  unsigned p;
  if (w != nullptr) {
    s = w->sched;
    p = at != nullptr ? at->id : w->pool;
  } else if (state_->sched != nullptr) {
    s = state_->sched;
    p = at != nullptr ? at->id : state_->queued_task->pool;
  } else {
    throw not_on_worker(
        "promptly::future::then called outside a runtime's worker on a future that no task computes (a promise's): "
        "call it from a task, which names the runtime");
  }
  auto body = [ante = *this, fn = std::decay_t<F>(std::forward<F>(f))]() mutable -> U {
    return detail::call_continuation<T>(fn, ante);
  };
  return detail::future_access::adopt<U>(
      detail::start_continuation<U>(*s, w, p, detail::admission::from_task, *state_, std::move(body)));
}

// when_any's result: the index of a future that was ready first, and every input future.
template <class Sequence>
struct when_any_result {
  std::size_t index;
  Sequence futures;
};

namespace detail {

// The state of a when_all / when_any future: it holds the input futures until it completes,
// and one hook registered on each input's state.
//
// Invariants
//  * refs = 1 per handle + 1 per hook still registered on an input; a hook releases its
//    reference after it ran, so the state outlives every hook.
//  * pending counts what must happen before the result is published: when_all, one per input
//    plus one for the registration loop; when_any, the first input to complete plus the
//    registration loop. So `futures` is moved into the result only after the loop stopped
//    reading the inputs; whoever brings pending to 0 publishes, exactly once.
//  * when_any: winner goes npos -> the index of the first input seen complete, once.
template <class Seq, bool Any>
struct combined_state final : future_state<std::conditional_t<Any, when_any_result<Seq>, Seq>> {
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  using base = future_state<std::conditional_t<Any, when_any_result<Seq>, Seq>>;

  struct hook final : waiter {
    hook() noexcept : waiter(&on_complete) {}
    static void on_complete(waiter* w) noexcept {
      auto* self = static_cast<hook*>(w);
      combined_state* owner = self->owner;
      owner->input_ready(self->index);
      owner->release();  // the hook's reference
    }
    combined_state* owner = nullptr;
    std::size_t index = 0;
  };

  combined_state(Seq seq, std::size_t n)
      : base(&destroy_self, nullptr, 1), futures(std::move(seq)), hooks(std::make_unique<hook[]>(n)),
        pending(Any ? 2 : n + 1) {}

  // Registers on every input (states[i] is input i's state); publishes once all are (or the
  // first is) ready.
  void start(future_state_base* const* states, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (Any)
        if (winner.load(std::memory_order_acquire) != npos) break;  // decided: no more hooks needed
      hooks[i].owner = this;
      hooks[i].index = i;
      this->add_ref();
      if (!states[i]->try_register(&hooks[i])) {
        this->release();  // not registered: nobody will run the hook
        input_ready(i);
      }
    }
    arrive();  // the registration loop's share
  }

  void input_ready(std::size_t i) noexcept {
    if constexpr (Any) {
      std::size_t none = npos;
      if (winner.compare_exchange_strong(none, i, std::memory_order_acq_rel)) arrive();
    } else {
      arrive();
    }
  }

  void arrive() noexcept {
    const std::size_t before = pending.fetch_sub(1, std::memory_order_acq_rel);
    assert(before >= 1 && "a combined future published twice");
    if (before != 1) return;
    if constexpr (Any)
      this->result.set_value(when_any_result<Seq>{winner.load(std::memory_order_relaxed), std::move(futures)});
    else
      this->result.set_value(std::move(futures));
    this->complete();
  }

  static void destroy_self(future_state_base* b) noexcept { delete static_cast<combined_state*>(b); }

  Seq futures;
  std::unique_ptr<hook[]> hooks;
  std::atomic<std::size_t> pending;
  std::atomic<std::size_t> winner{npos};
};

template <class Seq, bool Any>
auto make_combined(Seq seq, future_state_base* const* states, std::size_t n, const char* what) {
  static_assert(std::is_nothrow_move_constructible_v<Seq>);
  for (std::size_t i = 0; i < n; ++i)
    if (states[i] == nullptr)
      throw future_empty(std::string("promptly::") + what + ": input future " + std::to_string(i) + " has no state");
  if (Any && n == 0) throw std::invalid_argument("promptly::when_any of no futures: it would never be ready");
  auto* c = new combined_state<Seq, Any>(std::move(seq), n);
  c->start(states, n);
  using R = std::conditional_t<Any, when_any_result<Seq>, Seq>;
  return future_access::adopt<R>(c);
}

template <class It>
using future_range_t = std::vector<std::iter_value_t<It>>;

template <class Fut>
inline constexpr bool is_future_v = false;
template <class T>
inline constexpr bool is_future_v<future<T>> = true;

}  // namespace detail

// A future that is ready when every input is, holding the inputs (now ready: their get()
// does not wait, and rethrows their own exceptions). Never fails itself. Waiting on it parks
// without running an input inline. when_all() of nothing is ready at once.
template <class... T>
[[nodiscard]] future<std::tuple<future<T>...>> when_all(future<T>... fs) {
  detail::future_state_base* states[sizeof...(T) + 1] = {detail::future_access::state(fs)...};
  return detail::make_combined<std::tuple<future<T>...>, false>(std::tuple<future<T>...>(std::move(fs)...), states,
                                                                sizeof...(T), "when_all");
}

template <std::input_iterator It>
  requires detail::is_future_v<std::iter_value_t<It>>
[[nodiscard]] future<std::vector<std::iter_value_t<It>>> when_all(It first, It last) {
  std::vector<std::iter_value_t<It>> fs(first, last);
  std::vector<detail::future_state_base*> states;
  states.reserve(fs.size());
  for (auto& f : fs) states.push_back(detail::future_access::state(f));
  return detail::make_combined<std::vector<std::iter_value_t<It>>, false>(std::move(fs), states.data(), states.size(),
                                                                          "when_all");
}

// A future that is ready when any input is: .index names one that was ready first, .futures
// holds every input. Throws std::invalid_argument for no inputs (it could never be ready).
template <class... T>
  requires(sizeof...(T) >= 1)
[[nodiscard]] future<when_any_result<std::tuple<future<T>...>>> when_any(future<T>... fs) {
  detail::future_state_base* states[sizeof...(T)] = {detail::future_access::state(fs)...};
  return detail::make_combined<std::tuple<future<T>...>, true>(std::tuple<future<T>...>(std::move(fs)...), states,
                                                               sizeof...(T), "when_any");
}

template <std::input_iterator It>
  requires detail::is_future_v<std::iter_value_t<It>>
[[nodiscard]] future<when_any_result<std::vector<std::iter_value_t<It>>>> when_any(It first, It last) {
  std::vector<std::iter_value_t<It>> fs(first, last);
  std::vector<detail::future_state_base*> states;
  states.reserve(fs.size());
  for (auto& f : fs) states.push_back(detail::future_access::state(f));
  return detail::make_combined<std::vector<std::iter_value_t<It>>, true>(std::move(fs), states.data(), states.size(),
                                                                         "when_any");
}

}  // namespace promptly
