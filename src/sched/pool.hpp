// A pool (docs/design.md, "Pools"): a set of ready work with its own
// injection queue, one deque per worker, muggable deques (left with work by
// workers that moved away), the Taskflow sleep counters of the workers
// serving it, and its statistics. A priority level is a pool with a fixed
// rank; pools created at run time (one per job of a job server) come and go.
//
// Invariants
//  * Type-stable: a pool_record lives as long as its scheduler. Removing a
//    pool returns its id to the free list only when it holds no work
//    (pools.cpp), so a stale reader (a thief that read a victim's pool a
//    moment ago) only ever touches a valid record, and finds its deques
//    empty or holding the next pool's tasks, which carry the same id.
//  * A deque is in at most one place: own[w] of one worker w (only w's
//    thread reads or writes own[w]), in `muggable` (non-empty, unowned), or
//    in `spare` (empty, unowned).
//  * muggable_count == muggable.size() whenever mutex is free; read seq-cst
//    by a worker about to sleep.
//  * A deque in `muggable` may be empty: a thief that read its owner's
//    deque just before the owner handed it over can still steal from it and
//    empty it there. Whoever walks the list (take_muggable, steal_muggable,
//    drop_emptied_muggable) moves such deques to `spare`; remove_pool walks
//    it itself, since no worker may serve the pool it waits for.
//  * A worker takes a muggable deque whole (AMCilk, Sec. 3.5: mugging)
//    before it steals; thieves never probe a deque that is neither owned by
//    a worker serving the pool nor muggable.
//  * outstanding counts the pool's counted work (submissions, asyncs, graph
//    runs) accepted and not finished; parked counts its tasks waiting on a
//    parked fiber or blocked thread. remove_pool waits for the first and
//    for num_actives to reach 0 (both wake it), then for the pool's queues
//    (a task taken from the injection queue counts there until its worker
//    is active) and parked tasks to hold no work.
//  * drain_notices (runtime::on_drained) is guarded by the pool table's
//    mutex (pool_table.hpp); drain_notice_count mirrors its size for the
//    lock-free check of the threads that decrement the counts (Dekker, seq-cst: they
//    decrement, then read the mirror; a registration stores the mirror,
//    then reads the counts). A notice runs only after drained() was seen
//    true under the mutex, at or after its registration, and it runs once.
//    Taken notices are the taker's: the record is not touched while they
//    run, and remove_pool does not wait for them (runtime.hpp says why).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "promptly/pool.hpp"

#include "injection_queue.hpp"
#include "promptly/detail/waiting.hpp"
#include "promptly/detail/worker_view.hpp"

namespace promptly::detail {

enum class pool_phase : std::uint8_t { free, live, closing };

struct pool_record {
  explicit pool_record(unsigned workers) : own(workers, nullptr) {}

  // Identity: written under the pool table's mutex (create_pool,
  // set_fairness); read under it (the policy thread's views, stats).
  std::uint32_t id = 0;
  unsigned rank = 0;
  double weight = 1;
  std::uint64_t created_ns = 0;
  std::uint64_t creation_seq = 0;  // ties in rank: older pools first
  bool fixed = false;              // a priority level: never removed
  std::optional<elastic_params> elastic;
  std::atomic<pool_phase> phase{pool_phase::free};

  injection_queue injection;
  std::mutex mutex;
  std::vector<task_deque*> muggable;
  std::vector<task_deque*> spare;
  std::atomic<unsigned> muggable_count{0};
  std::vector<task_deque*> own;  // own[w]: worker w's deque of this pool, or null
  alignas(64) std::atomic<int> num_actives{0};
  alignas(64) std::atomic<int> num_thieves{0};
  std::atomic<bool> believed_nonempty{false};  // what the policy was last told
  // A backlog event was posted and no decision has viewed the pool since
  // (relaxed: a rate limit; a stale read costs one event more or less).
  std::atomic<bool> backlog_posted{false};
  std::atomic<bool> wants_more_cores{false};

  alignas(64) std::atomic<std::int64_t> outstanding{0};
  std::atomic<std::int64_t> parked{0};
  std::atomic<waiter*> drain_waiter{nullptr};  // remove_pool waiting for outstanding and num_actives to reach 0
  std::atomic<unsigned> drain_notice_count{0};   // drain_notices.size(), read without the lock
  std::vector<std::function<void()>> drain_notices;  // runtime::on_drained's callbacks; under the pool table's mutex

  // Accounts: worker-time and tasks of this pool, added by the workers
  // (relaxed: statistics) when they close an interval; read by the policy thread.
  alignas(64) std::atomic<std::uint64_t> work_ns{0};
  std::atomic<std::uint64_t> look_ns{0};
  std::atomic<std::uint64_t> tasks{0};
  std::atomic<std::uint64_t> switches_in{0};
  // The policy thread's baseline for "since the last quantum tick" (policy
  // mutex), valid for the incarnation seen_creation_seq.
  std::uint64_t seen_work_ns = 0;
  std::uint64_t seen_look_ns = 0;
  std::uint64_t seen_tasks = 0;        // `tasks` at the last tick
  bool queued_at_tick = false;         // has_queued_work() at the last tick
  std::uint64_t seen_creation_seq = ~std::uint64_t{0};

  // No counted work is left and no worker is active in the pool (seq-cst:
  // the Dekker pairs above).
  bool drained() const noexcept {
    return outstanding.load(std::memory_order_seq_cst) == 0 && num_actives.load(std::memory_order_seq_cst) == 0;
  }
  bool has_queued_work() const noexcept {
    return !injection.empty() || muggable_count.load(std::memory_order_seq_cst) != 0;
  }
  bool has_ready_work() const noexcept { return has_queued_work() || num_actives.load(std::memory_order_seq_cst) > 0; }
  // No work of the pool exists anywhere the runtime can see. The queue
  // before num_actives: a task taken from it is counted there until its
  // worker is active (scheduling_loop.cpp).
  bool quiescent() const noexcept {
    return injection.holds_nothing() && muggable_count.load(std::memory_order_seq_cst) == 0 &&
           num_actives.load(std::memory_order_seq_cst) == 0 && parked.load(std::memory_order_seq_cst) == 0;
  }

  void give_muggable(task_deque* d) {
    std::lock_guard lock(mutex);
    muggable.push_back(d);
    muggable_count.store(static_cast<unsigned>(muggable.size()), std::memory_order_seq_cst);
  }
  // Takes a non-empty muggable deque whole. Deques that thieves emptied
  // meanwhile go to `spare`, so that an empty pool looks empty.
  task_deque* take_muggable() {
    if (muggable_count.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(mutex);
    task_deque* found = nullptr;
    while (found == nullptr && !muggable.empty()) {
      task_deque* d = muggable.back();
      muggable.pop_back();
      if (d->empty())
        spare.push_back(d);
      else
        found = d;
    }
    muggable_count.store(static_cast<unsigned>(muggable.size()), std::memory_order_seq_cst);
    return found;
  }
  // Steals one task from some muggable deque without taking the deque (for
  // thieves of the pool and workers serving every pool); drops emptied
  // deques, the one it empties included. Left in `muggable`, that one kept
  // the pool looking busy (has_queued_work) until some worker of the pool
  // looked again; for a pool being removed, which nobody may serve any
  // more, remove_pool waited for ever.
  task* steal_muggable() {
    if (muggable_count.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(mutex);
    task* t = nullptr;
    for (std::size_t i = 0; i < muggable.size() && t == nullptr;) {
      t = muggable[i]->steal();
      if (muggable[i]->empty()) {
        spare.push_back(muggable[i]);
        muggable[i] = muggable.back();
        muggable.pop_back();
      } else {
        ++i;
      }
    }
    muggable_count.store(static_cast<unsigned>(muggable.size()), std::memory_order_seq_cst);
    return t;
  }
  // Moves the deques that thieves emptied from `muggable` to `spare`.
  void drop_emptied_muggable() {
    if (muggable_count.load(std::memory_order_relaxed) == 0) return;  // relaxed: a hint; the walk locks
    std::lock_guard lock(mutex);
    std::erase_if(muggable, [&](task_deque* d) {
      if (!d->empty()) return false;
      spare.push_back(d);
      return true;
    });
    muggable_count.store(static_cast<unsigned>(muggable.size()), std::memory_order_seq_cst);
  }
  task_deque* take_spare() {
    std::lock_guard lock(mutex);
    if (spare.empty()) return nullptr;
    task_deque* d = spare.back();
    spare.pop_back();
    return d;
  }
  void give_spare(task_deque* d) {
    std::lock_guard lock(mutex);
    spare.push_back(d);
  }
};

}  // namespace promptly::detail

namespace promptly::detail {
// A level's weight under the fair criterion: 1 each when no criterion is
// set, else its weight (levels past the end weigh 0).
inline double level_weight(const std::vector<long long>& weights, unsigned level) noexcept {
  if (weights.empty()) return 1.0;
  return level < weights.size() ? static_cast<double>(weights[level]) : 0.0;
}
}  // namespace promptly::detail
