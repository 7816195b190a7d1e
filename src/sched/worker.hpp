// A worker: one OS thread, its deque (in worker_view), its fibers, its
// random victim generator and its active/thief bookkeeping.
//
// Invariants
//  * Only the worker's own thread touches the fields below (fibers that run
//    on this thread, or the thread's main context); thieves touch only the
//    deque of the worker_view base.
//  * `active` mirrors whether this worker is counted in
//    scheduler::num_actives_ (seed 002, Definition 1).
#pragma once

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "fiber.hpp"
#include "promptly/detail/worker_view.hpp"

namespace promptly::detail {

struct worker : worker_view {
  std::unique_ptr<slab_allocator> slab_owner = std::make_unique<slab_allocator>();  // worker_view::slab points here

  fiber_record main_fiber;               // the thread's own context while a fiber runs
  fiber_record* current = nullptr;       // the fiber running on this thread
  std::vector<fiber_record*> idle;       // pooled fibers, suspended in the loop
  fiber_record* exited = nullptr;        // a fiber that just ended (annotation cleanup)

  bool active = false;
  std::uint32_t notifier_key = 0;
  std::uint64_t rng_state = 0;
  std::thread thread;

  static worker& of(worker_view& v) noexcept { return static_cast<worker&>(v); }

  unsigned next_random(unsigned bound) noexcept {
    // xorshift64*: cheap, per worker, good enough for victim selection.
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return static_cast<unsigned>(((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % bound);
  }
};

}  // namespace promptly::detail
