// The fibers of a scheduler: it owns every fiber record ever made, and
// keeps the idle ones (suspended in the scheduling loop) for reuse. Fibers
// migrate (a fiber parked on one worker resumes on another, whose loop
// fiber then idles there), so past a small bound a worker's idle fibers go
// to shared spares, which a worker takes before it makes a new fiber: the
// fibers made stay bounded by the most ever parked at once.
//
// Invariants
//  * A fiber record is never freed while the scheduler lives (a parked
//    fiber's waker may still hold it), except one whose stack could not be
//    mapped, discarded before anyone saw it.
//  * An idle fiber is in exactly one place: one worker's `idle` list (only
//    that worker's thread touches it) or the spares (under the mutex).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "fiber.hpp"
#include "worker.hpp"

namespace promptly::detail {

class fiber_cache {
 public:
  fiber_cache() = default;
  fiber_cache(const fiber_cache&) = delete;
  fiber_cache& operator=(const fiber_cache&) = delete;

  // One of w's own idle fibers, or null.
  static fiber_record* take_own_idle(worker& w) noexcept;
  // A spare idle fiber, or null.
  fiber_record* take_spare() noexcept;
  // A spare idle fiber, else a new record owned here (`fresh`: the caller
  // starts it, or discards it if that fails).
  struct taken {
    fiber_record* fiber;
    bool fresh;
  };
  taken take_spare_or_make();
  // A fiber suspended in the loop becomes idle on worker w; past the bound
  // half of w's idle fibers go to the spares.
  void make_idle(worker& w, fiber_record& f);
  // Frees a fresh record whose fiber could not be started.
  void discard(fiber_record& rec) noexcept;
  std::size_t count() const;  // fibers made and not discarded

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<fiber_record>> fibers_;  // owns every fiber record
  std::vector<fiber_record*> spare_;                   // idle fibers no worker keeps
};

}  // namespace promptly::detail
