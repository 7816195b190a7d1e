// The run-time priority-inversion detector (runtime_config::detect_inversions):
// counts touches that the type system cannot see, such as futures of plain
// levels, unsafe_future_cast, a ctx smuggled into a task of another
// priority, or dynamic priorities touched from code the dynamic check cannot
// attribute (docs/typed-priorities.md, "The detector").
//
// An inversion here is a touch, by a task running at level L, of a future
// computed by a task at a level greater (less urgent) than L: the DAG gets an
// ftouch edge from lower to higher priority, which Definition 1 of
// "Responsive Parallelism with Futures and State" (PLDI 2020) forbids. Levels are the linearised order, so a touch between two
// *incomparable* priorities that the topological sort put in the harmless
// direction is not counted; the typed API and the dynamic API check those.
//
// Futures that no task computes (promises, I/O) have no level, except the
// futures of typed I/O operations (promptly/typed/io.hpp): the priority Q
// they are declared at is known when they are created, and label_level()
// records Q's level in their state, so touching one from a more urgent task
// counts like touching a task's future (the futures-and-state paper's I/O
// futures carry a priority, Sec. 4.1). The state keeps the level the only
// way the touch hook (future.hpp) reads one: its queued_task points at a
// level_record, a task record that is never queued or run and carries only
// `pool`.
//
// Invariants
//  * touch_observer (future.hpp) is non-null iff at least one detector is
//    attached (registry::detectors is not empty); both change only under
//    registry::lock.
//  * A detector is attached from the constructor of its runtime, after the
//    workers started but before any task was accepted, and detached after
//    shutdown() returned (no task runs), so observe() never finds a detector
//    of a dead runtime.
//  * Each worker thread serves one runtime for its whole life, so the
//    thread-local (scheduler, detector) cache can never go stale.
//  * A level_record is a static that is written once, by its constructor,
//    and never queued: of a state whose queued_task points at one, only
//    observe() reads it (wait() reads queued_task further only for states
//    with a body, run_claimed != null, which label_level() leaves alone).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "promptly/detail/task.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/future.hpp"
#include "promptly/stats.hpp"
#include "promptly/config.hpp"

namespace promptly::detail {

// The execute function of a level_record, which no queue ever holds.
inline void level_record_never_runs(task*) noexcept { std::terminate(); }

// The task record that stands for `Level` in the state of a future no task
// computes; one per level for the whole program.
template <unsigned Level>
task* level_record() noexcept {
  static_assert(Level < max_levels, "promptly: a level_record is for a priority level, 0 .. max_levels-1");
  struct record : task {
    record() noexcept : task(&level_record_never_runs) { pool = Level; }
  };
  static record r;  // thread-safe static initialisation: pool is set before any thread sees &r
  return &r;
}

// Records `Level` as the level of `f`'s state if no task computes it (a
// promise's future, such as an I/O operation's), so that the detector sees
// touches of it. Must be called before `f`'s handle is shared: the field is
// plain, and the thread that later touches the future got the handle
// through whatever synchronisation handed it over, which orders this write
// before its read. A future computed by a task keeps its task's level.
template <unsigned Level, class T>
void label_level(const future<T>& f) noexcept {
  future_state<T>* s = future_access::state(f);
  if (s != nullptr && s->run_claimed == nullptr && s->queued_task == nullptr) s->queued_task = level_record<Level>();
}

class inversion_detector {
 public:
  explicit inversion_detector(const scheduler* s) noexcept : sched_(s) {}
  inversion_detector(const inversion_detector&) = delete;
  inversion_detector& operator=(const inversion_detector&) = delete;
  ~inversion_detector() { detach(); }

  // The detector of `s` when `enabled`, attached; else null.
  static std::unique_ptr<inversion_detector> attach(bool enabled, const scheduler* s) {
    if (!enabled) return nullptr;
    auto d = std::make_unique<inversion_detector>(s);
    registry& r = the_registry();
    std::lock_guard lock(r.lock);
    r.detectors.push_back(d.get());
    touch_observer.store(&observe, std::memory_order_relaxed);
    return d;
  }

  inversion_stats snapshot() const {
    std::lock_guard lock(lock_);
    return inversion_stats{true, total_, pairs_};
  }

 private:
  struct registry {
    std::mutex lock;
    std::vector<inversion_detector*> detectors;
  };
  static registry& the_registry() noexcept {
    static registry r;
    return r;
  }

  void detach() noexcept {
    registry& r = the_registry();
    std::lock_guard lock(r.lock);
    std::erase(r.detectors, this);
    if (r.detectors.empty()) touch_observer.store(nullptr, std::memory_order_relaxed);
  }

  static inversion_detector* find(const scheduler* s) noexcept {
    registry& r = the_registry();
    std::lock_guard lock(r.lock);
    for (inversion_detector* d : r.detectors)
      if (d->sched_ == s) return d;
    return nullptr;
  }

  // touch_observer: runs on the toucher's worker thread at every touch.
  static void observe(const worker_view& toucher, const task& touched) noexcept {
    // Levels are pools 0..max_levels-1; pools made at run time have no level order.
    if (touched.pool <= toucher.pool || touched.pool >= max_levels) return;  // as urgent or more: no inversion
    thread_local const scheduler* cached_sched = nullptr;
    thread_local inversion_detector* cached = nullptr;
    if (cached_sched != toucher.sched) {
      cached = find(toucher.sched);
      cached_sched = toucher.sched;
    }
    if (cached != nullptr) cached->record(toucher.pool, touched.pool);
  }

  void record(unsigned toucher_level, unsigned touched_level) noexcept {
    std::lock_guard lock(lock_);
    ++total_;
    for (inversion_report& p : pairs_) {
      if (p.toucher_level == toucher_level && p.touched_level == touched_level) {
        ++p.count;
        return;
      }
    }
    // At most max_levels^2 pairs; a failed allocation loses the pair, not the count.
    try {
      pairs_.push_back(inversion_report{toucher_level, touched_level, 1});
    } catch (...) {
    }
  }

  const scheduler* sched_;
  mutable std::mutex lock_;
  std::uint64_t total_ = 0;
  std::vector<inversion_report> pairs_;
};

}  // namespace promptly::detail
