// The standby threads of preemption (preemption.hpp states the protocol and its invariants).
#include "preemption.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace promptly::detail {

standby_dispatch::standby_dispatch(const checked_mutex& policy_mutex, pool_table& pools,
                                   const std::vector<std::unique_ptr<worker>>& workers, unsigned cores, unsigned standbys,
                                   std::chrono::nanoseconds threshold, event_board& board)
    : policy_mutex_(policy_mutex),
      pools_(pools),
      workers_(workers),
      cores_(cores),
      threshold_ns_(static_cast<std::uint64_t>(threshold.count())),
      board_(board),
      standby_pool_(standbys, no_pool) {}

std::vector<ext::event> standby_dispatch::take_waiting_locked(std::uint64_t now, std::span<const pool_set> usable,
                                                              std::uint64_t& next) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::vector<ext::event> waiting;
  if (standby_pool_.empty()) return waiting;
  const std::uint64_t threshold = threshold_ns_;
  board_.take_work_without_taker([&](std::uint32_t id) {
    if (std::any_of(watched_.begin(), watched_.end(), [&](const watched_pool& w) { return w.id == id; })) return;
    const pool_record& p = pools_.at(id);
    std::lock_guard identity(pools_.mutex());  // creation_seq is written under it
    watched_.push_back({id, p.creation_seq, now, p.tasks.load(std::memory_order_relaxed)});
  });
  auto check_at = [&](std::uint64_t at) {
    if (next == 0 || at < next) next = at;
  };
  std::erase_if(watched_, [&](const watched_pool& w) {
    if (w.id >= pools_.id_end()) return true;
    pool_record& p = pools_.at(w.id);
    const pool_phase ph = p.phase.load(std::memory_order_relaxed);
    if (ph != pool_phase::live && ph != pool_phase::closing) return true;
    {
      std::lock_guard identity(pools_.mutex());
      if (p.creation_seq != w.creation_seq) return true;
    }
    // Served meanwhile: a task of it ran, a worker is at it, or nothing is queued.
    if (p.tasks.load(std::memory_order_relaxed) != w.tasks || p.num_actives.load(std::memory_order_relaxed) != 0 ||
        p.injection.empty())
      return true;
    if (now < w.since_ns + threshold) {
      check_at(w.since_ns + threshold);
      return false;
    }
    // Only strands are preempted: a pool the policy gives no core waits by the policy's choice
    // (prompt starving a level below work; the unserved watch reports it if a core idles), and
    // a core of the pool that is looking for work or waking is on its way.
    if (held_by_strands_locked(w.id, usable) &&
        std::find(standby_pool_.begin(), standby_pool_.end(), w.id) == standby_pool_.end()) {
      waiting.push_back({ext::event_kind::waiting_behind_strands, w.id, {}});
      waited_since_.push_back({w.id, w.since_ns});
    }
    return true;
  });
  return waiting;
}

void standby_dispatch::recall_served_locked(std::uint64_t now, std::uint64_t& next) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  waited_since_.clear();
  // The standbys out: back when their pool has no ready work or a core of its own is active
  // there (num_actives counts the standby itself while it works).
  for (std::size_t i = 0; i < standby_pool_.size(); ++i) {
    const std::uint32_t id = standby_pool_[i];
    if (id == no_pool) continue;
    const pool_record& p = pools_.at(id);
    if (!p.has_ready_work() || p.num_actives.load(std::memory_order_relaxed) >= 2) {
      recall_locked(i);
    } else if (const std::uint64_t at = now + threshold_ns_; next == 0 || at < next) {
      next = at;
    }
  }
}

// Some usable core's assignment holds `pool`, and every such core is working (inside a task)
// at another pool that is not more urgent. Relaxed reads of the cores' phase and pool: a
// stale read preempts once more or once less, and the next arrival looks again.
bool standby_dispatch::held_by_strands_locked(std::uint32_t pool, std::span<const pool_set> usable) const {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::lock_guard identity(pools_.mutex());  // rank is written under it
  const unsigned rank = pools_.at(pool).rank;
  bool held = false;
  for (std::size_t c = 0; c < usable.size(); ++c) {
    const pool_set& a = usable[c];
    if (a.every()) return false;  // it takes the work wherever it is: no pool is held from it
    const auto ids = a.ranked_ids();
    if (std::find(ids.begin(), ids.end(), pool) == ids.end()) continue;
    const worker& w = *workers_[c];
    if (w.phase.load(std::memory_order_relaxed) != worker_phase::working) return false;
    const std::uint32_t serving = w.serving.load(std::memory_order_relaxed);
    if (serving == pool || pools_.at(serving).rank < rank) return false;  // at the pool, or in more urgent work
    held = true;
  }
  return held;
}

void standby_dispatch::send_locked(std::uint32_t pool, trace_ring* trace) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (standby_pool_.empty()) return;
  if (std::find(standby_pool_.begin(), standby_pool_.end(), pool) != standby_pool_.end()) return;  // one is there
  const auto free = std::find(standby_pool_.begin(), standby_pool_.end(), no_pool);
  if (free == standby_pool_.end()) return;  // every standby is out: the event comes again while the work waits
  const std::size_t i = static_cast<std::size_t>(free - standby_pool_.begin());
  worker& w = *workers_[cores_ + i];
  std::uint64_t since = now_ns();
  for (const waited& ws : waited_since_)
    if (ws.pool == pool) since = ws.since_ns;
  standby_pool_[i] = pool;
  w.preempt_since_ns.store(since, std::memory_order_relaxed);  // relaxed: a statistic, read by the standby
  preemptions_.fetch_add(1, std::memory_order_relaxed);        // relaxed: a statistic
  if (trace != nullptr) [[unlikely]]
    trace->record(trace_kind::preempt, now_ns(), pool, static_cast<std::uint32_t>(w.index));
  notifier::fence_before_notify();
  // Seq-cst: as policy_driver::apply_locked (the standby re-reads its word after preparing to wait).
  w.assigned.store(pool, std::memory_order_seq_cst);
  notifier::notify(w.slot);
}

void standby_dispatch::recall_locked(std::size_t i) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  worker& w = *workers_[cores_ + i];
  standby_pool_[i] = no_pool;
  notifier::fence_before_notify();
  w.assigned.store(no_pool, std::memory_order_seq_cst);  // its strand boundary and its wait both read it
  notifier::notify(w.slot);
}

// A standby starts its first task since it was sent: the latency from the work first found
// waiting to now (mechanism.preempt). Relaxed: statistics of the standby's own thread.
void standby_dispatch::note_started(worker& w) noexcept {
  if (const std::uint64_t since = w.preempt_since_ns.exchange(0, std::memory_order_relaxed); since != 0)
    w.samples.record(mechanism_op::preempt, elapsed_since(since));
}

}  // namespace promptly::detail
