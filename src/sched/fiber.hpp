// Fibers: stacks that tasks run on, switched with Boost.Context.
//
// Every fiber runs the scheduling loop at its base. A worker thread runs on
// exactly one fiber at a time; when a task must wait, its whole fiber is
// parked and the worker continues the loop on an idle fiber from its pool.
// Stacks come from Boost's protected_fixedsize_stack (mmap + a guard page)
// through recorded_stack_allocator, which keeps their bounds in the record
// (fiber_stack.hpp); fibers are pooled, never freed while the runtime runs,
// so steady state creates no stacks.
//
// What a switch must carry besides registers. A fiber may resume on another
// thread, so per-thread state that belongs to the code running on the fiber
// must travel with it:
//  * The C++ runtime keeps the stack of caught exceptions and the count of
//    exceptions in flight per thread (__cxa_get_globals()). A task that
//    parks inside a catch handler (or in a destructor run by unwinding) and
//    resumes elsewhere would otherwise end its handler on another thread's
//    list: __cxa_end_catch would destroy another task's exception, `throw;`
//    and std::current_exception() would see the wrong one, and unrelated
//    tasks would see a stale current exception. So every switch saves the
//    outgoing fiber's exception state into its record and the incoming
//    fiber restores its own (a new fiber starts with none; a thread's own
//    context is saved and restored like any fiber).
//  * ThreadSanitizer and AddressSanitizer must be told which stack runs
//    (DESIGN.md, "Known pitfalls"); Boost 1.74 does neither unless Boost
//    itself was built for it.
//  * The running stack's bounds, for stack_headroom() and the overflow report.
//  * The queue of future states its destroy_released loop has yet to
//    destroy (fiber_stack.cpp), when the fiber parks inside that loop.
//
// Invariants
//  * fiber_record::context holds the suspended continuation of a fiber that
//    is not running; it is empty while the fiber runs.
//  * switch_fiber(from, to, f) runs f on `to`'s stack after `from` has been
//    saved, so f may publish `from` to other threads (they can resume it).
//    f runs before `to` restores its own per-thread state, so it must not
//    throw, catch or inspect exceptions.
//  * Every place where a fiber starts or continues calls fiber_arrived()
//    first thing: right after resume_with returns in switch_fiber, and at the
//    top of the body start_fiber wraps. A fiber's body must end by returning
//    its thread's own context (the only context no start_fiber created).
#pragma once

#include <boost/context/fiber.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

#include "fiber_stack.hpp"
#include "toolchain.hpp"

#if PROMPTLY_UNDER_TSAN
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
}
#endif

namespace promptly::detail {

struct fiber_record {
  boost::context::fiber context;
  void* tsan_fiber = nullptr;
  fiber_stack stack;             // bounds of the fiber's stack (null for a thread's own context)
  exception_globals eh;          // the fiber's exception state while it is suspended
  std::uintptr_t releasing = 0;  // its queue of future states to destroy while suspended (fiber_stack.cpp)
  void* asan_fake_stack = nullptr;  // AddressSanitizer's fake stack while suspended
  std::uint16_t trace_number = 0;   // the fiber's name in the event trace: 1..65535, reused after 65535 fibers
};

// A fiber's name in the event trace (0: none).
inline std::uint32_t trace_id(const fiber_record* f) noexcept { return f != nullptr ? f->trace_number : 0; }

// Out of line (fiber_stack.cpp), and opaque to the optimizer on purpose: the
// C++ runtime's __cxa_get_globals() is declared `const`, so a caller that
// inlined it could reuse the previous thread's address after a switch.
// Saves `from`'s exception state and tells the sanitizers it leaves for `to`.
void fiber_leaving(fiber_record& from, const fiber_record& to) noexcept;
// `self` now runs on this thread: restores its exception state, makes it the
// running stack, and completes the sanitizer switch.
void fiber_arrived(fiber_record& self) noexcept;
// `self` ends and its thread's own context continues (the fiber never returns).
void fiber_ending(fiber_record& self) noexcept;

inline void* tsan_current_fiber() noexcept {
#if PROMPTLY_UNDER_TSAN
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

// Creates a suspended fiber that, when first switched to, runs body(); body
// must end by returning its thread's own context (see the invariants). The
// stack's bounds go to rec.stack. (Boost's constructor briefly enters the new
// stack and returns; no code of ours runs there, so that hop is not
// announced to the sanitizers.)
template <class Body>
void start_fiber(fiber_record& rec, std::size_t stack_bytes, Body body) {
#if PROMPTLY_UNDER_TSAN
  rec.tsan_fiber = __tsan_create_fiber(0);
#endif
  rec.context = boost::context::fiber(std::allocator_arg, recorded_stack_allocator(rec.stack, stack_bytes),
                                      [&rec, body = std::move(body)](boost::context::fiber&& /*none*/) mutable {
                                        fiber_arrived(rec);
                                        boost::context::fiber next = body();
                                        fiber_ending(rec);
                                        return next;
                                      });
}

inline void destroy_fiber_annotation(fiber_record& rec) noexcept {
#if PROMPTLY_UNDER_TSAN
  if (rec.tsan_fiber != nullptr) __tsan_destroy_fiber(rec.tsan_fiber);
#endif
  rec.tsan_fiber = nullptr;
}

inline void announce_switch(fiber_record& to) noexcept {
#if PROMPTLY_UNDER_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#else
  (void)to;
#endif
}

template <class OnArrival>
void switch_fiber(fiber_record& from, fiber_record& to, OnArrival&& on_arrival) {
  fiber_leaving(from, to);
  announce_switch(to);
  std::move(to.context).resume_with([&from, &on_arrival](boost::context::fiber&& suspended) {
    from.context = std::move(suspended);
    on_arrival();
    return boost::context::fiber{};
  });
  fiber_arrived(from);  // resumed, possibly on another thread
}

}  // namespace promptly::detail
