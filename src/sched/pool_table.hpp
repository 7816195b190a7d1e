// The pool table: pool ids to type-stable records (pool.hpp), the ids free
// for reuse, the lock that guards each record's identity and drain notices,
// and the drain notices' and remover's wake-ups. The scheduler's pool
// operations (pools.cpp: create, remove, admit, make ready) build on it;
// it calls nothing back.
//
// Invariants (asserted in the Debug build)
//  * Type-stable: a slot, once set, points to the same record for the
//    table's life, so a reader holding a stale id touches a valid record.
//  * Ids are dense: every id below id_end() has a record, and ids are
//    handed out as the last freed one, else id_end().
//  * An id is in the free list exactly while its record's phase is free;
//    live_count() counts the records that are not free (live or closing).
//  * Only holders of mutex() write a slot, the free list, id_end, a
//    record's identity (rank, weight, elastic, creation) and its drain
//    notices; the slots and id_end are read lock-free (acquire: a reader
//    sees a constructed record).
//  * on_drained notices (pool.hpp): a registration and the threads that
//    drain the pool meet under mutex() once the lock-free mirror says a
//    notice waits; the notices run outside the lock, on the thread that
//    took them, which touches the record no more.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "event_bitmap.hpp"
#include "pool.hpp"

namespace promptly::detail {

class pool_table {
 public:
  explicit pool_table(unsigned workers);
  pool_table(const pool_table&) = delete;
  pool_table& operator=(const pool_table&) = delete;

  // The record of pool `id` if one was ever made (live or not), else null.
  pool_record* find(std::uint32_t id) const noexcept {
    return id < max_pools ? slots_[id].load(std::memory_order_acquire) : nullptr;  // acquire: the record's construction
  }
  pool_record& at(std::uint32_t id) const noexcept {
    pool_record* p = slots_[id].load(std::memory_order_acquire);
    assert(p != nullptr && "an id in use names a record");
    return *p;
  }
  // Every id ever made is below it.
  std::uint32_t id_end(std::memory_order order = std::memory_order_acquire) const noexcept { return id_end_.load(order); }
  std::size_t live_count() const noexcept { return live_.load(std::memory_order_relaxed); }
  std::mutex& mutex() const noexcept { return mutex_; }

  // Under mutex(): the record for a new pool, on the last freed id, else
  // the next unused one (its record made now), with its creation_seq; the
  // caller sets the rest of its identity and stores phase live. Throws
  // std::length_error when max_pools ids are in use, std::bad_alloc (no id
  // taken) when a record cannot be made.
  pool_record& open_locked();
  // Under mutex(): a closing pool's record becomes free and its id reusable.
  void free_locked(pool_record& p);

  // Takes p's notices if `all` or p is drained (mutex() held).
  static std::vector<std::function<void()>> take_drain_notices_locked(pool_record& p, bool all) noexcept;
  // Runs taken notices, outside mutex(); a notice that throws terminates.
  static void run_drain_notices(std::vector<std::function<void()>>& due) noexcept;
  // Runs p's notices if it is drained and wakes a remove_pool waiting for
  // it; the thread that drained a count calls it (pools.cpp).
  void wake_drain_waiter(pool_record& p) noexcept;
  // At shutdown, once no task is left: every pool is drained, so a notice
  // still registered runs now (none should be: the last decrement ran them).
  void run_leftover_drain_notices() noexcept;

 private:
  const unsigned workers_;  // each record has a deque slot per worker
  std::unique_ptr<std::atomic<pool_record*>[]> slots_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<pool_record>> records_;
  std::vector<std::uint32_t> free_ids_;
  std::uint64_t next_creation_seq_ = 0;
  std::atomic<std::uint32_t> id_end_{0};
  std::atomic<std::size_t> live_{0};
};

}  // namespace promptly::detail
