// Fiber stacks and what travels with a fiber across a switch: see
// fiber_stack.hpp and the header comment of fiber.hpp.
//
// Invariants
//  * running_stack is the running context's stack on this thread (null
//    before the thread's first switch); written only by fiber_arrived().
//  * releasing belongs to the running fiber (or thread context): 0 when no
//    destroy_released loop runs on it, else its queue of states to destroy,
//    linked through their `waiters` words and ended by queue_end. A switch
//    saves it in the outgoing fiber's record and clears it (fiber_leaving),
//    the arriving fiber restores its own (fiber_arrived), so a destructor
//    that parks inside the loop takes its queue with it and no other fiber
//    on the thread appends to it meanwhile.
//  * previous_action[i] is the disposition of fatal_signals[i] before
//    ours was installed; written once, before our handler is installed,
//    never changed after.
//  * The signal handler is async-signal-safe: it reads a thread-local
//    pointer and a fiber_stack that live as long as the fiber, formats into
//    a stack buffer, and calls only write(2), sigaction(2), raise(3),
//    abort(3) and the previous handler.
#include "fiber_stack.hpp"

#include <cxxabi.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "fiber.hpp"
#include "promptly/future.hpp"  // declares stack_allows_inline_run, destroy_released

#include "toolchain.hpp"
#if PROMPTLY_UNDER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__ARM_EABI_UNWINDER__)
#error "ARM EHABI's __cxa_eh_globals has a third field (propagatingExceptions) that fibers would have to carry too"
#endif
static_assert(offsetof(promptly::detail::exception_globals, uncaught_exceptions) == sizeof(void*),
              "exception_globals must match __cxa_eh_globals {__cxa_exception*; unsigned int;}");

// fiber_leaving/fiber_arrived must stay calls (fiber.hpp explains why):
// PROMPTLY_NEVER_INLINE (toolchain.hpp).

namespace promptly::detail {
namespace {

constinit thread_local const fiber_stack* running_stack = nullptr;

constinit thread_local std::uintptr_t releasing = 0;
constexpr std::uintptr_t queue_end = 1;  // odd: no state's address

// After a destroy in destroy_released's loop: the running fiber's next
// queued state, or null when the queue is empty (it is then closed). Out of
// line because the destroy may have parked and resumed on another thread,
// and the compiler takes a thread-local's address to be constant within a
// function.
PROMPTLY_NEVER_INLINE future_state_base* next_to_destroy() noexcept {
  const std::uintptr_t head = releasing;
  if (head == queue_end) {
    releasing = 0;
    return nullptr;
  }
  auto* s = reinterpret_cast<future_state_base*>(head);
  releasing = s->waiters.load(std::memory_order_relaxed);
  return s;
}

exception_globals& thread_exception_globals() noexcept {
  return *reinterpret_cast<exception_globals*>(abi::__cxa_get_globals());
}

#if PROMPTLY_UNDER_ASAN
// Bounds of the calling thread's own stack (where a fiber's body returns to).
void own_stack_bounds(const void** bottom, std::size_t* size) noexcept {
  pthread_attr_t attr;
  void* addr = nullptr;
  std::size_t bytes = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &bytes);
    pthread_attr_destroy(&attr);
  }
  *bottom = addr;
  *size = bytes;
}
#endif

// ---- overflow report ----

constexpr int fatal_signals[] = {SIGSEGV, SIGBUS};
struct sigaction previous_action[2];

int signal_index(int sig) noexcept { return sig == SIGSEGV ? 0 : 1; }

// Appends the decimal digits of v to p; returns the new end.
char* append_decimal(char* p, std::size_t v) noexcept {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) *p++ = digits[--n];
  return p;
}

char* append(char* p, const char* text) noexcept {
  while (*text != '\0') *p++ = *text++;
  return p;
}

[[noreturn]] void report_overflow(const fiber_stack& s) noexcept {
  char msg[160];
  char* p = append(msg, "promptly: fiber stack overflow (");
  if (s.configured % 1024 == 0)
    p = append(append_decimal(p, s.configured / 1024), " KiB");
  else
    p = append(append_decimal(p, s.configured), " bytes");
  p = append(p, "); raise runtime_config::fiber_stack_bytes\n");
  (void)!write(STDERR_FILENO, msg, static_cast<std::size_t>(p - msg));
  std::abort();
}

// Not an overflow of a fiber of ours: hand the fault to whoever had the
// signal before us, as if we had never been installed.
void pass_on(int sig, siginfo_t* info, void* context) noexcept {
  const struct sigaction& prev = previous_action[signal_index(sig)];
  if ((prev.sa_flags & SA_SIGINFO) != 0) {
    prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  } else {
    // Default action: restore it; a fault then recurs when the faulting
    // instruction re-executes on return, a sent signal (si_code <= 0) has
    // to be sent again.
    sigaction(sig, &prev, nullptr);
    if (info->si_code <= 0) raise(sig);
  }
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const fiber_stack* s = running_stack;
  const char* addr = static_cast<const char*>(info->si_addr);
  if (s != nullptr && s->guard != nullptr && addr >= s->guard && addr < s->bottom) report_overflow(*s);
  pass_on(sig, info, context);
}

void install_overflow_handler() noexcept {
  for (int sig : fatal_signals) {
    struct sigaction ours {};
    ours.sa_sigaction = &on_fatal_signal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    // Record the previous disposition before ours can run.
    sigaction(sig, nullptr, &previous_action[signal_index(sig)]);
    sigaction(sig, &ours, nullptr);
  }
}

}  // namespace

boost::context::stack_context recorded_stack_allocator::allocate() {
  boost::context::stack_context sctx = boost::context::protected_fixedsize_stack(bytes_).allocate();
  // protected_fixedsize_stack maps [sp - size, sp) and protects its lowest page.
  char* const base = static_cast<char*>(sctx.sp) - sctx.size;
  record_->guard = base;
  record_->bottom = base + boost::context::protected_fixedsize_stack::traits_type::page_size();
  record_->top = static_cast<char*>(sctx.sp);
  record_->configured = bytes_;
#if PROMPTLY_UNDER_ASAN
  // AddressSanitizer (clang 14) keeps shadow memory across munmap and mmap,
  // so a stack mapped where an ended fiber's stack was inherits the redzones
  // of that fiber's frames that never returned (its entry frames: the body
  // ends by jumping to the thread's context). Instrumented frames rewrite
  // their own shadow, but uninstrumented ones (libstdc++'s steady_clock::now
  // passing a local to clock_gettime) would land on a stale redzone and be
  // reported. A new stack starts clean.
  __asan_unpoison_memory_region(record_->bottom, static_cast<std::size_t>(record_->top - record_->bottom));
#endif
  return sctx;
}

void recorded_stack_allocator::deallocate(boost::context::stack_context& sctx) noexcept {
  *record_ = fiber_stack{};
  boost::context::protected_fixedsize_stack(bytes_).deallocate(sctx);
}

PROMPTLY_NEVER_INLINE void fiber_leaving(fiber_record& from, const fiber_record& to) noexcept {
  from.eh = thread_exception_globals();
  from.releasing = std::exchange(releasing, 0);
#if PROMPTLY_UNDER_ASAN
  const void* bottom = to.stack.bottom;
  std::size_t size = static_cast<std::size_t>(to.stack.top - to.stack.bottom);
  if (bottom == nullptr) own_stack_bounds(&bottom, &size);
  __sanitizer_start_switch_fiber(&from.asan_fake_stack, bottom, size);
#else
  (void)to;
#endif
}

PROMPTLY_NEVER_INLINE void fiber_arrived(fiber_record& self) noexcept {
#if PROMPTLY_UNDER_ASAN
  __sanitizer_finish_switch_fiber(self.asan_fake_stack, nullptr, nullptr);
#endif
  thread_exception_globals() = self.eh;
  running_stack = &self.stack;
  releasing = self.releasing;
}

void fiber_ending(fiber_record& self) noexcept {
#if PROMPTLY_UNDER_ASAN
  const void* bottom;
  std::size_t size;
  own_stack_bounds(&bottom, &size);
  // Not null, although the fiber ends: null frees the fiber's fake stack
  // while frames on it (this one, Boost's fiber_entry) still run. Fake stacks
  // exist only with detect_stack_use_after_return, which fibers do not
  // support anyway: Boost 1.74's fcontext constructor enters the new stack
  // unannounced, so fiber_entry's frame lands on the creator's fake stack.
  __sanitizer_start_switch_fiber(&self.asan_fake_stack, bottom, size);
#else
  (void)self;
#endif
}

std::size_t stack_headroom() noexcept {
  const fiber_stack* s = running_stack;
  if (s == nullptr || s->bottom == nullptr) return SIZE_MAX;
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  return here > s->bottom ? static_cast<std::size_t>(here - s->bottom) : 0;
}

// future::get's inline run of an unstarted task nests one more task on the
// caller's stack; a chain of such gets nests without bound. Run inline only
// while the headroom exceeds a reserve left for the inline task itself:
// a quarter of the stack, but at least 64 KiB when the stack has 128 KiB or
// more (smaller stacks keep half). Otherwise the caller parks and the
// runtime runs the task on a fresh fiber.
bool stack_allows_inline_run() noexcept {
  const fiber_stack* s = running_stack;
  if (s == nullptr || s->bottom == nullptr) return true;
  const std::size_t size = static_cast<std::size_t>(s->top - s->bottom);
  const std::size_t reserve = std::max(size / 4, std::min<std::size_t>(64 * 1024, size / 2));
  return stack_headroom() > reserve;
}

// A trampoline, the iterative form of a recursive release (like CPython's
// "trashcan" for deallocating deeply nested containers): destroying a
// state runs its closure's and value's destructors, which may release the
// last reference to another state; that one joins the running loop's queue
// instead of being destroyed inside. A chain of n captured futures then
// takes n iterations on one frame instead of n nested destructors (16 bytes
// a level in a GCC Release build: 20,000 links overflow a 256 KiB fiber
// stack, about 500,000 a thread's 8 MiB).
void destroy_released(future_state_base* s) noexcept {
  assert(s->refs.load(std::memory_order_relaxed) == 0);
  // Nobody holds a handle, so nobody waits: the word is free for the link.
  assert(s->waiters.load(std::memory_order_relaxed) == 0 ||
         s->waiters.load(std::memory_order_relaxed) == future_state_base::ready_tag);
  // Read directly: nothing has switched fibers since this call began.
  if (releasing != 0) {  // inside the loop below on this fiber: leave s to it
    s->waiters.store(releasing, std::memory_order_relaxed);
    releasing = reinterpret_cast<std::uintptr_t>(s);
    return;
  }
  releasing = queue_end;
  do {
    s->destroy(s);  // may queue more states; may park and resume on another thread
  } while ((s = next_to_destroy()) != nullptr);
}

fiber_overflow_guard::fiber_overflow_guard() {
  static std::once_flag installed;
  std::call_once(installed, install_overflow_handler);
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) return;  // keep the thread's own
  // Room for our handler and for a chained one (sanitizers print reports).
#if defined(_SC_SIGSTKSZ)
  const long min_bytes = sysconf(_SC_SIGSTKSZ);
#else
  const long min_bytes = SIGSTKSZ;
#endif
  alt_bytes_ = std::max<std::size_t>(64 * 1024, static_cast<std::size_t>(min_bytes > 0 ? min_bytes : 0) * 4);
  void* mem = mmap(nullptr, alt_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;  // no report on this thread, but a plain SIGSEGV as before
  stack_t alt{};
  alt.ss_sp = mem;
  alt.ss_size = alt_bytes_;
  if (sigaltstack(&alt, nullptr) != 0) {
    munmap(mem, alt_bytes_);
    return;
  }
  alt_stack_ = mem;
}

fiber_overflow_guard::~fiber_overflow_guard() {
  if (alt_stack_ == nullptr) return;
  stack_t off{};
  off.ss_flags = SS_DISABLE;
  sigaltstack(&off, nullptr);
  munmap(alt_stack_, alt_bytes_);
}

}  // namespace promptly::detail
