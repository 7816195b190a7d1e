// Randomized schedules for stress tests: when enabled with a seed, every
// chaos::point() in the sleep protocol, level moves, parking and the policy
// driver may yield, spin or sleep for a few microseconds, chosen by a
// per-thread generator derived from the seed. Interleavings that a quiet
// machine never produces (a decision between a steal and the increment of
// num_actives, a notification between prepare_wait and the re-check) then
// happen within seconds.
//
// Off (seed 0, the default), a point costs one relaxed load and a branch,
// and points sit only on slow paths (never in push/pop/steal or at the
// inline strand boundary). Enable with chaos::enable(seed) or the
// environment variable PROMPTLY_CHAOS=<seed> (read when a runtime starts).
// The same seed gives each thread the same sequence of perturbations; the
// interleaving still depends on the OS, so a failing seed makes a failure
// likely again, not certain.
#pragma once

#include <atomic>
#include <cstdint>

namespace promptly::detail::chaos {

extern std::atomic<std::uint64_t> seed;  // 0 = off

void perturb() noexcept;
void enable(std::uint64_t s) noexcept;
// Reads PROMPTLY_CHAOS once per process; returns the seed in force (0 = off).
std::uint64_t enable_from_environment() noexcept;

// Takes one from a fault-injection budget: true while it is non-zero (-1:
// every time until reset to 0).
inline bool take_from_budget(std::atomic<int>& budget) noexcept {
  // Relaxed: a budget, not a synchronisation; the CAS keeps the count exact.
  int n = budget.load(std::memory_order_relaxed);
  while (n != 0)
    if (n < 0 || budget.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return true;
  return false;
}

// Fault injection: while the budget is non-zero, creating a fiber fails as
// if no stack could be mapped. Tests use it to drive the fallbacks of
// parking (parking.cpp).
extern std::atomic<int> fiber_failures;
inline void fail_fiber_creations(int n) noexcept { fiber_failures.store(n, std::memory_order_relaxed); }
inline bool fiber_creation_fails() noexcept { return take_from_budget(fiber_failures); }

// Fault injection: while the budget is non-zero, a worker leaving a pool
// steals back every task of the deque it has just handed over to the
// pool's muggable list and makes them ready at the pool's injection
// queue: what thieves that read the deque just before the hand-over do
// (pool_moves.cpp). The deque stays in the list, empty.
extern std::atomic<int> stale_steals;
inline void steal_at_hand_overs(int n) noexcept { stale_steals.store(n, std::memory_order_relaxed); }
inline bool steal_at_hand_over() noexcept { return take_from_budget(stale_steals); }

// Fault injection: while the budget is non-zero, a thief's yield counts as
// one that kept it off its CPU for longer than costly_yield_ns, as beside a
// CPU-bound process: the exploration ends at that yield
// (scheduling_loop.cpp, explore_task).
extern std::atomic<int> costly_yields;
inline void make_yields_costly(int n) noexcept { costly_yields.store(n, std::memory_order_relaxed); }
inline bool yield_counts_as_costly() noexcept { return take_from_budget(costly_yields); }

// Fault injection: while the budget is non-zero, remove_pool's waiter,
// once published, lingers before its last readiness check until a waker
// took it (at most 5 ms), and 1 ms more: the remover has then resumed and
// may have returned, ending its wait event (pools.cpp).
extern std::atomic<int> late_removal_checks;
inline void delay_removal_checks(int n) noexcept { late_removal_checks.store(n, std::memory_order_relaxed); }
inline bool removal_check_is_late() noexcept { return take_from_budget(late_removal_checks); }

// Fault injection: while the budget is non-zero, an idle worker's poll of
// the I/O reactor's epoll set that fetched events (or of the readiness the
// io_uring reactor queued for workers) waits 2 ms before it handles them,
// as a worker preempted there would: closes of those descriptors and the
// reactor's freeing of retired states run meanwhile (src/io/reactor.cpp,
// poll_from_idle_worker, take_ring_ready).
extern std::atomic<int> stalled_worker_polls;
inline void stall_worker_polls(int n) noexcept { stalled_worker_polls.store(n, std::memory_order_relaxed); }
inline bool worker_poll_stalls() noexcept { return take_from_budget(stalled_worker_polls); }

// Fault injection: while the budget is non-zero, a worker going to sleep in
// the I/O reactor's epoll set waits 2 ms between its last check of its
// state and its epoll_wait, as a worker preempted there would: a doorbell
// rung meanwhile reaches no blocked waiter, and the reactor may fetch it
// (src/io/reactor.cpp, wait_from_sleeping_worker and pass_on_doorbell).
extern std::atomic<int> stalled_worker_sleeps;
inline void stall_worker_sleeps(int n) noexcept { stalled_worker_sleeps.store(n, std::memory_order_relaxed); }
inline bool worker_sleep_stalls() noexcept { return take_from_budget(stalled_worker_sleeps); }

// Fault injection: a gate a test holds. Armed, it stops the next thread
// that passes it and holds it there, reporting that it does, until the test
// opens it. Passing an unarmed gate costs one relaxed load.
class test_gate {
 public:
  void arm() noexcept { state_.store(armed, std::memory_order_seq_cst); }
  bool held() const noexcept { return state_.load(std::memory_order_seq_cst) == holding; }
  // Releases the thread it holds, or disarms it if none came; either way
  // the gate ends off (the held thread turns it off as it leaves), so later
  // passes stay on the one-load path.
  void open() noexcept {
    int held_now = holding;
    if (state_.compare_exchange_strong(held_now, opened, std::memory_order_seq_cst)) return;
    int armed_now = armed;
    state_.compare_exchange_strong(armed_now, off, std::memory_order_seq_cst);
  }
  void pass() noexcept {
    // Relaxed: the common case is unarmed; an arming this pass misses came
    // after it, which no test counts on.
    if (state_.load(std::memory_order_relaxed) != off) [[unlikely]]
      wait();
  }

 private:
  enum : int { off, armed, holding, opened };
  void wait() noexcept;  // chaos.cpp
  // Seq-cst: the test's arm/held/open and the held thread's steps are one
  // total order.
  std::atomic<int> state_{off};
};

// Holds the next I/O call whose try at once would block (src/io/fd_state.hpp,
// try_at_once) between that try and its operation's start: readiness that
// arrives meanwhile finds no operation queued.
extern test_gate at_once_miss_gate;
// Holds the next decision that wakes two cores or more, after its first
// wake-up (src/sched/policy_driver.cpp, apply_locked): what a decider does
// that the worker it woke preempted on its core.
extern test_gate decision_wake_gate;
// Holds the next thread that is about to handle a readiness event
// (src/io/reactor.cpp, on_ready): the event's operations wait meanwhile
// while the kernel already reports the descriptor ready.
extern test_gate ready_event_gate;

inline void point() noexcept {
  // Relaxed: a stale read only delays when perturbations start or stop.
  if (seed.load(std::memory_order_relaxed) != 0) [[unlikely]]
    perturb();
}

}  // namespace promptly::detail::chaos
