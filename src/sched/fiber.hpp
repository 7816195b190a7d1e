// Fibers: stacks that tasks run on, switched with Boost.Context.
//
// Every fiber runs the scheduling loop at its base. A worker thread runs on
// exactly one fiber at a time; when a task must wait, its whole fiber is
// parked and the worker continues the loop on an idle fiber from its pool.
// Stacks come from Boost's protected_fixedsize_stack (mmap + a guard page);
// fibers are pooled, never freed while the runtime runs, so steady state
// creates no stacks.
//
// Invariants
//  * fiber_record::context holds the suspended continuation of a fiber that
//    is not running; it is empty while the fiber runs.
//  * switch_fiber(from, to, f) runs f on `to`'s stack after `from` has been
//    saved, so f may publish `from` to other threads (they can resume it).
//  * ThreadSanitizer is told about every switch (DESIGN.md, "Known
//    pitfalls"); Boost 1.74 does not do it itself.
#pragma once

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <cstddef>
#include <functional>
#include <utility>

#if defined(__SANITIZE_THREAD__)
#define PROMPTLY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROMPTLY_TSAN 1
#endif
#endif

#if defined(PROMPTLY_TSAN)
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
};

inline void* tsan_current_fiber() noexcept {
#if defined(PROMPTLY_TSAN)
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

// Creates a suspended fiber that, when first switched to, runs body(); body
// must return the fiber to continue on when it ends.
template <class Body>
void start_fiber(fiber_record& rec, std::size_t stack_bytes, Body body) {
#if defined(PROMPTLY_TSAN)
  rec.tsan_fiber = __tsan_create_fiber(0);
#endif
  rec.context = boost::context::fiber(std::allocator_arg, boost::context::protected_fixedsize_stack(stack_bytes),
                                      [body = std::move(body)](boost::context::fiber&& /*none*/) mutable {
                                        return body();
                                      });
}

inline void destroy_fiber_annotation(fiber_record& rec) noexcept {
#if defined(PROMPTLY_TSAN)
  if (rec.tsan_fiber != nullptr) __tsan_destroy_fiber(rec.tsan_fiber);
#endif
  rec.tsan_fiber = nullptr;
}

inline void announce_switch(fiber_record& to) noexcept {
#if defined(PROMPTLY_TSAN)
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#else
  (void)to;
#endif
}

template <class OnArrival>
void switch_fiber(fiber_record& from, fiber_record& to, OnArrival&& on_arrival) {
  announce_switch(to);
  std::move(to.context).resume_with([&from, &on_arrival](boost::context::fiber&& suspended) {
    from.context = std::move(suspended);
    on_arrival();
    return boost::context::fiber{};
  });
}

}  // namespace promptly::detail
