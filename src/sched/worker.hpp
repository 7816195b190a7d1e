// A worker: one OS thread, the pool it serves (its deque of that pool is
// pool_record::own[index]), its fibers, its sleep slot, its random victim
// generator, and the time it spent working and looking for work (the
// policies' per-core input; per-pool time goes to the pool's accounts).
//
// Invariants
//  * Only the worker's own thread touches the plain fields below (fibers
//    that run on this thread, or the thread's main context). Thieves read
//    `serving` (the pool whose deque `visible` is) and steal from `visible`;
//    the policy thread writes worker_view::assigned; the stats reader reads
//    the accounts, `phase` and `phase_since_ns`.
//  * at == &pool_at(pool) whenever the worker runs a task.
//  * `active` mirrors whether this worker is counted in the num_actives of
//    pool `active_domain` (Taskflow's executor, Definition 1), and, if
//    `active_every`, in the every-pool domain's too; the decrements go
//    where the increments went even if the policy changed meanwhile.
//  * `set` is the set of the assignment word `set_word`, the last the
//    worker read; it serves that set once `accepted` == `set_word` (not
//    yet, under a steal-boundary policy, while its deque holds work), and
//    then serves a pool of it. `published` is written by the policy thread
//    only (assignment.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "assignment.hpp"
#include "fiber.hpp"
#include "event_trace.hpp"
#include "mechanism_samples.hpp"
#include "notifier.hpp"
#include "pool.hpp"
#include "promptly/config.hpp"
#include "promptly/detail/worker_view.hpp"

namespace promptly::detail {

// A worker that sleeps stays `looking`: its sleep counts as time spent looking for work.
enum class worker_phase : std::uint8_t { working, looking };

struct worker : worker_view {
  std::unique_ptr<slab_allocator> slab_owner = std::make_unique<slab_allocator>();  // worker_view::slab points here

  pool_record* at = nullptr;  // the record of the pool served
  std::atomic<task_deque*> visible{nullptr};
  std::atomic<unsigned> serving{0};
  unsigned boundaries_since_walk = 0;  // donated: strand boundaries since the last more_urgent_work_in_set walk

  // Time of this core, all pools together (relaxed: statistics).
  std::atomic<std::uint64_t> work_ns{0};
  std::atomic<std::uint64_t> look_ns{0};
  std::atomic<worker_phase> phase{worker_phase::looking};
  std::atomic<std::uint64_t> phase_since_ns{0};

  sleep_slot slot;
  // When the policy last gave this core another pool or none (0 = no such
  // change pending); the core records realloc or sleep when it acts on it.
  // Relaxed: a statistic, written by the policy thread, consumed by the worker.
  std::atomic<std::uint64_t> reassigned_ns{0};
  mechanism_samples samples;
  trace_ring trace;  // empty unless tracing (event_trace.hpp)
  fiber_record main_fiber;               // the thread's own context while a fiber runs
  fiber_record* current = nullptr;       // the fiber running on this thread
  std::vector<fiber_record*> idle;       // pooled fibers, suspended in the loop
  fiber_record* exited = nullptr;        // a fiber that just ended (annotation cleanup)

  published_set published;                  // the policy thread's copy of a multi-pool set
  pool_set set = pool_set::one(0);           // the set of set_word
  unsigned set_word = 0;                     // the assignment word last read (its own thread)
  bool active = false;
  bool active_every = false;             // counted in the every-pool domain while active
  bool decide_pending = false;           // it posted an event it decides itself at its loop top
  pool_record* active_domain = nullptr;  // the pool whose num_actives counts this worker while active
  pool_record* taken_from = nullptr;     // the pool whose injection queue counts the task it took as taken
  std::uint64_t rng_state = 0;
  std::thread thread;
  int cpu = -1;  // runtime_config::pin_workers: the CPU the thread is pinned to (set before other threads read it)
  std::atomic<std::int64_t> os_time_slice_us{0};  // the slice the kernel reports for the thread (os_time_slice.hpp)
  bool standby = false;  // a standby thread for preemption (preemption.cpp), not a core; fixed at construction
  // Sent to a pool: when its work was first found waiting (0 once its first task started).
  std::atomic<std::uint64_t> preempt_since_ns{0};

  static worker& of(worker_view& v) noexcept { return static_cast<worker&>(v); }

  unsigned next_random(unsigned bound) noexcept {
    // xorshift64*: cheap, per worker, good enough for victim selection.
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return static_cast<unsigned>(((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % bound);
  }
};

// v's assignment for the word `word` read from v.assigned (updated if it
// changed while the set was read): any thread, without a lock
// (assignment.hpp, the double buffer).
inline pool_set read_assignment(const worker& v, unsigned& word) noexcept {
  for (;;) {
    if (word == no_pool) return pool_set::none();
    if (!(word & published_bit)) return pool_set::one(word);
    const pool_set s = v.published.read(word);
    std::atomic_thread_fence(std::memory_order_acquire);  // acquire: pairs with publish's release fence (assignment.hpp)
    const unsigned again = assignment_of(v.assigned.load(std::memory_order_relaxed));  // relaxed: ordered by the fence
    if (again == word) return s;
    word = again;
  }
}

}  // namespace promptly::detail
