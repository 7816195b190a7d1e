// The pool table (pool_table.hpp states the invariants).
#include "pool_table.hpp"

#include <stdexcept>
#include <string>

namespace promptly::detail {

pool_table::pool_table(unsigned workers)
    : workers_(workers), slots_(std::make_unique<std::atomic<pool_record*>[]>(max_pools)) {}

pool_record& pool_table::open_locked() {
  std::uint32_t id;
  pool_record* p;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    p = slots_[id].load(std::memory_order_relaxed);
    assert(p != nullptr && p->phase.load(std::memory_order_relaxed) == pool_phase::free && "a free id names a free record");
    free_ids_.pop_back();
  } else {
    id = id_end_.load(std::memory_order_relaxed);
    if (id >= max_pools)
      throw std::length_error("promptly: cannot create a pool: " + std::to_string(max_pools) +
                              " pools exist (levels included), the limit; remove pools you no longer need");
    records_.push_back(std::make_unique<pool_record>(workers_));  // may throw bad_alloc: no id taken yet
    p = records_.back().get();
    p->id = id;
    slots_[id].store(p, std::memory_order_release);  // release: readers see a constructed record
    id_end_.store(id + 1, std::memory_order_release);
  }
  p->creation_seq = next_creation_seq_++;
  live_.fetch_add(1, std::memory_order_relaxed);
  return *p;
}

void pool_table::free_locked(pool_record& p) {
  assert(p.phase.load(std::memory_order_relaxed) == pool_phase::closing && "only a closing pool is freed");
  free_ids_.reserve(free_ids_.size() + 1);  // may throw bad_alloc: then the pool stays closing
  p.phase.store(pool_phase::free, std::memory_order_seq_cst);
  free_ids_.push_back(p.id);
  live_.fetch_sub(1, std::memory_order_relaxed);
}

std::vector<std::function<void()>> pool_table::take_drain_notices_locked(pool_record& p, bool all) noexcept {
  std::vector<std::function<void()>> due;
  if (p.drain_notices.empty() || (!all && !p.drained())) return due;
  due.swap(p.drain_notices);
  // Relaxed: under the mutex; a reader that sees the old count takes the
  // lock and finds nothing.
  p.drain_notice_count.store(0, std::memory_order_relaxed);
  return due;
}

void pool_table::run_drain_notices(std::vector<std::function<void()>>& due) noexcept {
  for (auto& fn : due) fn();  // a throw ends here: noexcept terminates, as on_drained's contract says
}

// Seq-cst: pairs with pool_removal_event::try_register and on_drained (the
// caller decremented its count before; pools.cpp).
void pool_table::wake_drain_waiter(pool_record& p) noexcept {
  // Notices first, on the thread that saw the drain; a remove_pool woken
  // below would run what is left anyway (it takes them all). Should the
  // record be freed and taken again before the lock, what runs is a notice
  // of the new pool seen drained under the lock: still a true observation
  // (pool.hpp).
  if (p.drain_notice_count.load(std::memory_order_seq_cst) != 0) {
    std::vector<std::function<void()>> due;
    {
      std::lock_guard lock(mutex_);
      due = take_drain_notices_locked(p, false);
    }
    run_drain_notices(due);
  }
  if (p.drain_waiter.load(std::memory_order_seq_cst) == nullptr) return;  // nobody removes the pool: no RMW
  if (waiter* w = p.drain_waiter.exchange(nullptr, std::memory_order_seq_cst)) w->wake(w);
}

void pool_table::run_leftover_drain_notices() noexcept {
  for (std::uint32_t id = 0; id < id_end(); ++id) {  // acquire: the slots below
    pool_record* p = find(id);
    if (p == nullptr) continue;
    std::vector<std::function<void()>> due;
    {
      std::lock_guard lock(mutex_);
      assert((p->drain_notices.empty() || p->drained()) && "a notice waits on a pool with work after shutdown");
      due = take_drain_notices_locked(*p, true);
    }
    run_drain_notices(due);
  }
}

}  // namespace promptly::detail
