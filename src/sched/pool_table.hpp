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
//  * The queued index covers every pool with queued work: a pool whose
//    has_queued_work() is true has its bit set, or its bit is about to be
//    set by the thread that queued the work, which queues first and marks
//    after (note_queued). A bit may stay set after the work is gone
//    (superset): only a walker that then finds the pool without queued
//    work clears it, and re-reads the pool after the clear, re-marking it
//    if work came. Seq-cst on both sides, so a push either precedes the
//    walker's re-read or its mark follows the clear. Walks over the index
//    (steals and the sleep check of workers serving every pool) thus cost
//    the pools that had queued work since the last walk, not the pool count.
//    queued_words_ covers the non-zero words of the index by the same rule
//    (a marker sets the pool's bit, then the word's; a walker that finds a
//    word zero unmarks it, then re-reads the word). Asserted in the Debug
//    build where nothing runs (shutdown).
#pragma once

#include <atomic>
#include <bit>
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
  // The set-walking rules (set_walk.hpp) read pools through this.
  auto ready_in_pool() const noexcept {
    return [this](std::uint32_t id) noexcept { return at(id).has_ready_work(); };
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

  // The queued index (see the invariants). The thread that queued work at
  // pool `id` (its injection queue or a muggable deque) calls it after.
  // Reads first: a set bit needs no RMW on a line every queuer shares, and
  // a walker clears only before its re-read of the pool, which then sees
  // this queuer's work.
  void note_queued(std::uint32_t id) noexcept {
    assert(id < max_pools);
    std::atomic<std::uint64_t>& word = queued_[id / 64];
    const std::uint64_t bit = std::uint64_t{1} << (id % 64);
    if ((word.load(std::memory_order_seq_cst) & bit) == 0) word.fetch_or(bit, std::memory_order_seq_cst);
    const std::uint64_t word_bit = std::uint64_t{1} << (id / 64);
    if ((queued_words_.load(std::memory_order_seq_cst) & word_bit) == 0) queued_words_.fetch_or(word_bit, std::memory_order_seq_cst);
  }
  // Calls visit(id) for each pool id marked in the index, below id_end(),
  // from the word holding `start` round to it, until visit returns true;
  // returns true if it did. A marked pool found without queued work after
  // visit is unmarked, then re-read (the invariants): found with work
  // again, it is re-marked and visited once more. Visits cost the
  // marked pools plus the words holding them (queued_words_ names those).
  template <class Visit>
  bool for_each_queued(std::uint32_t start, Visit&& visit) noexcept {
    const std::uint32_t words = (id_end(std::memory_order_seq_cst) + 63) / 64;
    if (words == 0) return false;
    const std::uint32_t first = (start / 64) % words;
    const std::uint64_t in_use = words == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << words) - 1;
    const std::uint64_t marked = queued_words_.load(std::memory_order_seq_cst) & in_use;
    const std::uint64_t from_first = marked & (~std::uint64_t{0} << first);
    for (std::uint64_t part : {from_first, marked & ~from_first})  // round from `first`
      for (; part != 0; part &= part - 1) {
        const auto w = static_cast<std::uint32_t>(std::countr_zero(part));
        std::uint64_t bits = queued_[w].load(std::memory_order_seq_cst);
        if (bits == 0) {  // unmark the word, then re-read it (the same rule as a pool's bit)
          queued_words_.fetch_and(~(std::uint64_t{1} << w), std::memory_order_seq_cst);
          bits = queued_[w].load(std::memory_order_seq_cst);
          if (bits != 0) queued_words_.fetch_or(std::uint64_t{1} << w, std::memory_order_seq_cst);
        }
        for (; bits != 0; bits &= bits - 1) {
          const std::uint32_t id = w * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
          if (visit(id)) return true;
          pool_record& p = at(id);
          if (p.has_queued_work()) continue;
          queued_[w].fetch_and(~(std::uint64_t{1} << (id % 64)), std::memory_order_seq_cst);
          // Work came after visit looked: keep it covered, and visit it again,
          // for a worker that read the word while it was clear may sleep on
          // the strength of this walker's finding it.
          if (p.has_queued_work()) {
            note_queued(id);
            if (visit(id)) return true;
          }
        }
      }
    return false;
  }
  bool queued_marked(std::uint32_t id) const noexcept {
    return (queued_[id / 64].load(std::memory_order_seq_cst) >> (id % 64) & 1) != 0;
  }
  // Debug: with nothing running, every pool with queued work is marked.
  void assert_queued_index_covers() const noexcept {
#ifndef NDEBUG
    for (std::uint32_t id = 0; id < id_end(); ++id)
      assert((!at(id).has_queued_work() || (queued_marked(id) && (queued_words_.load() >> (id / 64) & 1) != 0)) &&
             "the queued index covers every pool with queued work");
#endif
  }
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
  std::atomic<std::uint64_t> queued_[max_pools / 64]{};  // the queued index, a bit per pool id
  std::atomic<std::uint64_t> queued_words_{0};           // a bit per word of queued_ that may be non-zero
};

}  // namespace promptly::detail
