// The kept view (kept_view.hpp states the invariants).
#include "kept_view.hpp"

#include <algorithm>
#include <cassert>
#include <mutex>

#include "worker_accounts.hpp"

namespace promptly::detail {

kept_view::kept_view(const checked_mutex& policy_mutex, pool_table& pools, const std::vector<std::unique_ptr<worker>>& workers,
                     unsigned levels)
    : policy_mutex_(policy_mutex), pools_(pools), workers_(workers), levels_(levels) {}

// The view a decision is made on. Pools that are live or draining (closing)
// appear, most urgent first; `advance` moves the baselines (quantum ticks),
// so events between ticks see what accrued since the last tick.
//
// The view is kept between decisions (pool_views_, sorted by rank, then
// creation) and only the pools that may have changed are read again: the
// pools of this batch's events, the pools of every core's set and the pool
// each core serves now, and the pools whose cores the last decision changed
// (marked by the driver as it applies: read_again). Any other pool is unserved: no core accrued
// time there, its work did not start or end (a pool emptying or filling
// posts an event, and the belief follows the view, so a flip is never
// missed: policy_driver::decide_once_locked), and it was neither added nor removed (events
// too), so its view is what it was; only the age of a pool with work is
// brought forward (the elastic policy's deadlines), and its queue length
// may lag until a core serves it (a queue at a pool nobody serves only
// grows, so a non-zero hint stays non-zero). A decision then costs what changed, not the pool count: with
// 4000 idle pools a full read took most of the decision
// (bench/results/core/pools-many/). A full read is done at installation and
// while some core serves every pool (it may accrue time anywhere). A
// quantum tick reads the pools read since the previous tick and the pools
// with work (refresh below); a pool whose tick showed accrued time is read
// again at the next decision, which then shows it none.
void kept_view::refresh(bool full, bool advance, std::span<const ext::event> events, std::span<const pool_set> applied) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  const std::uint64_t now = now_ns();
  const std::uint32_t end = pools_.id_end();
  if (view_index_.size() < max_pools) {
    view_index_.assign(max_pools, absent_view);
    view_marked_.assign(max_pools, false);
    view_read_since_tick_.assign(max_pools, false);
  }
  full = full || !pool_views_valid_ ||
         std::any_of(applied.begin(), applied.end(), [](const pool_set& a) { return a.every(); });
  view_refreshed_.clear();
  auto mark = [&](std::uint32_t id) {
    if (id < end && !view_marked_[id]) {
      view_marked_[id] = true;
      view_refreshed_.push_back(id);
    }
  };
  if (full) {
    for (std::uint32_t id = 0; id < end; ++id) mark(id);
  } else {
    for (const std::uint32_t id : view_dirty_) mark(id);
    for (const ext::event& ev : events) mark(ev.pool);
    if (advance) {
      // A tick restarts every pool's measures and judges stalls: the pools
      // read since the last tick (any may have accrued time) and the pools
      // with work (a stall is queued work nobody ran). A pool in neither was
      // read at or before the last tick with nothing accrued since.
      for (const std::uint32_t id : view_since_tick_) mark(id);
      for (const std::uint32_t at : view_busy_)
        if (at < pool_views_.size()) mark(pool_views_[at].id);
    }
    for (std::size_t c = 0; c < workers_.size(); ++c) {  // a standby's pool too: its time accrues there
      mark(workers_[c]->serving.load(std::memory_order_relaxed));
      if (c < applied.size())
        for (const std::uint32_t id : applied[c].ranked_ids()) mark(id);
    }
  }
  view_dirty_.clear();
  std::lock_guard identity(pools_.mutex());  // rank, weight, creation: written under it
  bool reorder = false;
  if (advance) {
    for (const std::uint32_t id : view_since_tick_) view_read_since_tick_[id] = false;
    view_since_tick_.clear();
  }
  for (const std::uint32_t id : view_refreshed_) {
    view_marked_[id] = false;
    // A tick's reads start the list afresh: a pool it shows with accrued
    // time is read again at the next decision (below), and joins it then.
    if (!advance && !view_read_since_tick_[id]) {
      view_read_since_tick_[id] = true;
      view_since_tick_.push_back(id);
    }
    pool_record& p = pools_.at(id);
    const pool_phase ph = p.phase.load(std::memory_order_seq_cst);
    const bool live = ph == pool_phase::live || ph == pool_phase::closing;
    std::uint32_t at = view_index_[id];
    if (at != absent_view && (!live || pool_view_seq_[at] != p.creation_seq)) {  // gone, or its id taken again
      pool_views_[at].id = ext::no_pool;  // erased below
      view_index_[id] = at = absent_view;
      reorder = true;
    }
    if (!live) continue;
    if (at == absent_view) {
      at = static_cast<std::uint32_t>(pool_views_.size());
      pool_views_.emplace_back();
      pool_view_seq_.push_back(p.creation_seq);
      view_index_[id] = at;
      reorder = true;
    }
    std::uint64_t open_work = 0, open_look = 0;
    for (auto& w : workers_) {
      const open_interval open = open_interval_of(*w, now);
      if (open.pool == id) (open.working ? open_work : open_look) += open.ns;
    }
    unsigned cores = 0;
    for (const pool_set& a : applied) cores += a.first() == id ? 1 : 0;
    ext::pool_view& v = pool_views_[at];
    if (p.seen_creation_seq != p.creation_seq) {  // a new pool on this record: its accounts restarted
      p.seen_creation_seq = p.creation_seq;
      p.seen_work_ns = p.seen_look_ns = 0;
      p.seen_tasks = 0;
      p.queued_at_tick = false;
    }
    p.backlog_posted.store(false, std::memory_order_relaxed);  // this decision sees the queue
    const std::uint64_t work = p.work_ns.load(std::memory_order_relaxed) + open_work;
    const std::uint64_t look = p.look_ns.load(std::memory_order_relaxed) + open_look;
    v = ext::pool_view{};
    v.id = id;
    v.rank = p.rank;
    v.weight = p.weight;
    v.age = std::chrono::nanoseconds(now > p.created_ns ? now - p.created_ns : 0);
    v.has_ready_work = p.has_ready_work();
    v.queued = p.injection.size();
    v.work_s = seconds_of(work > p.seen_work_ns ? work - p.seen_work_ns : 0);
    v.look_s = seconds_of(look > p.seen_look_ns ? look - p.seen_look_ns : 0);
    v.cores = cores;
    v.wants_more_cores = p.wants_more_cores.load(std::memory_order_relaxed);
    v.elastic = p.elastic;
    v.level = id < levels_;
    if (advance) {
      // Relaxed: a statistic; a task counted late only hides a stall for a tick.
      const std::uint64_t tasks = p.tasks.load(std::memory_order_relaxed);
      const bool queued = p.has_queued_work();
      v.stalled = queued && p.queued_at_tick && tasks == p.seen_tasks;
      // The next decision shows what accrued since this tick, and no stall: read it again.
      if (v.stalled || v.work_s > 0 || v.look_s > 0) view_dirty_.push_back(id);
      p.seen_work_ns = work;
      p.seen_look_ns = look;
      p.seen_tasks = tasks;
      p.queued_at_tick = queued;
    }
  }
  if (reorder) {  // a pool came or went: drop the erased, sort by rank, then creation
    std::vector<std::size_t> order;
    order.reserve(pool_views_.size());
    for (std::size_t i = 0; i < pool_views_.size(); ++i)
      if (pool_views_[i].id != ext::no_pool) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (pool_views_[a].rank != pool_views_[b].rank) return pool_views_[a].rank < pool_views_[b].rank;
      return pool_view_seq_[a] < pool_view_seq_[b];
    });
    std::vector<ext::pool_view> views;
    std::vector<std::uint64_t> seqs;
    views.reserve(order.size());
    seqs.reserve(order.size());
    for (const std::size_t i : order) {
      view_index_[pool_views_[i].id] = static_cast<std::uint32_t>(views.size());
      views.push_back(std::move(pool_views_[i]));
      seqs.push_back(pool_view_seq_[i]);
    }
    pool_views_ = std::move(views);
    pool_view_seq_ = std::move(seqs);
  }
  pool_views_valid_ = true;
  // The positions of the pools with ready work, most urgent first
  // (ext::decision::pools_with_work): updated for the pools read again,
  // rebuilt when a pool came or went (positions moved).
  if (reorder) {
    view_busy_.clear();
    for (std::uint32_t at = 0; at < pool_views_.size(); ++at)
      if (pool_views_[at].has_ready_work) view_busy_.push_back(at);
  } else {
    for (const std::uint32_t id : view_refreshed_) {
      const std::uint32_t at = view_index_[id];
      if (at == absent_view) continue;
      const auto it = std::lower_bound(view_busy_.begin(), view_busy_.end(), at);
      const bool listed = it != view_busy_.end() && *it == at;
      if (pool_views_[at].has_ready_work && !listed)
        view_busy_.insert(it, at);
      else if (!pool_views_[at].has_ready_work && listed)
        view_busy_.erase(it);
    }
  }
  views_with_work_.clear();
  for (const std::uint32_t at : view_busy_) {
    ext::pool_view& v = pool_views_[at];
    const std::uint64_t created = pools_.at(v.id).created_ns;
    v.age = std::chrono::nanoseconds(now > created ? now - created : 0);
    views_with_work_.push_back(v);
  }
  assert(std::all_of(view_busy_.begin(), view_busy_.end(),
                     [&](std::uint32_t at) { return at < pool_views_.size() && pool_views_[at].has_ready_work; }) &&
         std::is_sorted(view_busy_.begin(), view_busy_.end()) && "view_busy_ lists the pools with work, in order");
  assert(std::is_sorted(pool_views_.begin(), pool_views_.end(),
                        [](const ext::pool_view& a, const ext::pool_view& b) { return a.rank < b.rank; }) &&
         "the view lists pools most urgent first");
}

const ext::pool_view* kept_view::find(std::uint32_t id) const noexcept {
  return id < view_index_.size() && view_index_[id] != absent_view ? &pool_views_[view_index_[id]] : nullptr;
}

void kept_view::credit_cpu(std::uint32_t id, double seconds, std::vector<std::uint32_t>& credited) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (id >= view_index_.size() || view_index_[id] == absent_view) return;
  const std::uint32_t at = view_index_[id];
  ext::pool_view& pv = pool_views_[at];
  if (std::find(credited.begin(), credited.end(), at) == credited.end()) {
    credited.push_back(at);
    pv.cpu_s = 0;
    view_dirty_.push_back(id);  // the next decision reads it again: cpu_s is 0 between ticks
  }
  pv.cpu_s += seconds;
}

void kept_view::end_credit(std::span<const std::uint32_t> credited) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  // with_work() holds copies of the kept view (refresh).
  for (const std::uint32_t at : credited) {
    const auto it = std::lower_bound(view_busy_.begin(), view_busy_.end(), at);
    if (it != view_busy_.end() && *it == at) views_with_work_[static_cast<std::size_t>(it - view_busy_.begin())].cpu_s = pool_views_[at].cpu_s;
  }
}

}  // namespace promptly::detail
