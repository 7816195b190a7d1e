// Per-fiber machine state that Boost.Context does not manage, and what the
// runtime derives from it: the bounds of each fiber's stack (for the inline
// depth limit of future::get and for naming stack overflows), the C++
// runtime's per-thread exception state (saved and restored across
// switches), and the AddressSanitizer view of which stack is running.
//
// Invariants
//  * fiber_stack::guard..bottom is the fiber's PROT_NONE guard page and
//    bottom..top its usable stack; all null for a thread's own context.
//  * On every thread, `the running stack` (fiber_stack.cpp) is the stack of
//    the fiber or thread context whose code runs now; fiber_arrived() sets
//    it, and it is only read by that thread (including its signal handler).
//  * A fiber_record's `eh` holds its exception state exactly while it is
//    suspended: fiber_leaving() saves it, fiber_arrived() restores it, and a
//    new record starts empty (no caught exception, none in flight).
#pragma once

#include <boost/context/stack_context.hpp>

#include <cstddef>

namespace promptly::detail {

struct fiber_stack {
  char* guard = nullptr;       // lowest address of the guard page
  char* bottom = nullptr;      // lowest usable address (just above the guard)
  char* top = nullptr;         // one past the highest usable address
  std::size_t configured = 0;  // runtime_config::fiber_stack_bytes, for the overflow message
};

// The C++ runtime's per-thread exception state, laid out as the Itanium C++
// ABI (2.4.2) defines __cxa_eh_globals and as both libsupc++ (unwind-cxx.h)
// and libc++abi (cxa_exception.h) implement it: the stack of caught
// exceptions (std::current_exception(), `throw;`, __cxa_end_catch) and the
// count of exceptions in flight (std::uncaught_exceptions()). This layout
// is part of the ABI that compiled catch handlers rely on, so it cannot
// change under us; only ARM EHABI appends a field (refused in the .cpp).
struct exception_globals {
  void* caught_exceptions = nullptr;
  unsigned int uncaught_exceptions = 0;
};

// Boost.Context stack allocator: protected_fixedsize_stack (mmap, one guard
// page below), recording the bounds in a fiber_stack that outlives the fiber.
class recorded_stack_allocator {
 public:
  recorded_stack_allocator(fiber_stack& record, std::size_t usable_bytes) noexcept
      : record_(&record), bytes_(usable_bytes) {}
  boost::context::stack_context allocate();  // throws std::bad_alloc
  void deallocate(boost::context::stack_context& sctx) noexcept;

 private:
  fiber_stack* record_;
  std::size_t bytes_;
};

// Bytes of the running fiber's stack below the caller's frame; SIZE_MAX when
// the caller is not on a fiber stack (a thread's own context).
std::size_t stack_headroom() noexcept;

// Reports overflows of fiber stacks run by this thread: installs (once per
// process) a SIGSEGV/SIGBUS handler on an alternate signal stack, which
// prints "promptly: fiber stack overflow (N KiB); raise
// runtime_config::fiber_stack_bytes" and aborts when the fault is in the
// running fiber's guard page, and passes every other fault to the handler
// that was installed before (or the default action). Gives this thread an
// alternate signal stack unless it has one. One per worker thread, for the
// thread's lifetime.
class fiber_overflow_guard {
 public:
  fiber_overflow_guard();
  ~fiber_overflow_guard();
  fiber_overflow_guard(const fiber_overflow_guard&) = delete;
  fiber_overflow_guard& operator=(const fiber_overflow_guard&) = delete;

 private:
  void* alt_stack_ = nullptr;  // ours to remove; null if the thread already had one
  std::size_t alt_bytes_ = 0;
};

}  // namespace promptly::detail
