// The view of the pools that the policy driver keeps between decisions
// (ext::pool_view per live or closing pool, most urgent first), so that a
// decision reads again only the pools that may have changed: with 4000 idle
// pools a full read took most of the decision (bench/results/core/pools-many/).
// kept_view.cpp explains which pools are read again and why none is missed.
//
// Invariants (asserted in the Debug build)
//  * Every member function runs under the policy driver's lock (policy_mutex_).
//  * The view lists every live or closing pool once, most urgent first;
//    index_by_id() maps each listed id to its position; busy_positions()
//    holds, ascending, exactly the positions whose view has ready work, and
//    with_work() their views in the same order. A listed pool's
//    has_ready_work is its belief (both set by the decision that last read
//    it, and a flip of either posts an event that reads it again), so
//    reading again only the pools of the events, of the cores' sets and of
//    the cores misses no flip (refresh).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "assignment.hpp"
#include "checked_mutex.hpp"
#include "pool_table.hpp"
#include "promptly/ext/policy.hpp"
#include "worker.hpp"

namespace promptly::detail {

class kept_view {
 public:
  // `policy_mutex` is the driver's lock (asserted held); `workers` the
  // scheduler's (a core's open interval accrues at the pool it serves);
  // pools below `levels` are priority levels.
  kept_view(const checked_mutex& policy_mutex, pool_table& pools, const std::vector<std::unique_ptr<worker>>& workers,
            unsigned levels);
  kept_view(const kept_view&) = delete;
  kept_view& operator=(const kept_view&) = delete;

  // Reads again the pools that may have changed (every pool if `full`, or
  // if a core in `applied`, each core's assignment as applied, serves every
  // pool); `advance` (a quantum tick) moves the baselines.
  void refresh(bool full, bool advance, std::span<const ext::event> events, std::span<const pool_set> applied);

  std::span<const ext::pool_view> pools() const noexcept { return pool_views_; }
  // Pool id -> position in pools() (absent: >= pools().size()).
  std::span<const std::uint32_t> index_by_id() const noexcept { return view_index_; }
  const std::vector<ext::pool_view>& with_work() const noexcept { return views_with_work_; }
  std::span<const std::uint32_t> busy_positions() const noexcept { return view_busy_; }
  // The ids the last refresh read again.
  std::span<const std::uint32_t> refreshed() const noexcept { return view_refreshed_; }
  // The view of pool `id` if listed, else null.
  const ext::pool_view* find(std::uint32_t id) const noexcept;

  // The next refresh reads pool `id` again (its cores changed, or its view
  // must not repeat what a decision consumed).
  void read_again(std::uint32_t id) { view_dirty_.push_back(id); }
  // A decision on the last refresh failed: its beliefs were not set, so the
  // next refresh reads those pools again.
  void read_refreshed_again() { view_dirty_.insert(view_dirty_.end(), view_refreshed_.begin(), view_refreshed_.end()); }
  // Something changed without an event (weights): the next refresh reads every pool.
  void read_all_again() noexcept { pool_views_valid_ = false; }

  // A quantum tick's CPU time: adds `seconds` to pool `id`'s cpu_s, from 0 at
  // its first credit of the tick (`credited`: the positions credited so far),
  // then end_credit copies the sums into with_work().
  void credit_cpu(std::uint32_t id, double seconds, std::vector<std::uint32_t>& credited);
  void end_credit(std::span<const std::uint32_t> credited);

 private:
  const checked_mutex& policy_mutex_;
  pool_table& pools_;
  const std::vector<std::unique_ptr<worker>>& workers_;
  const unsigned levels_;
  // pool_views_ sorted most urgent first with each one's creation_seq,
  // view_index_ from id to position (absent_view: not live), the ids to read
  // again at the next view (view_dirty_, view_marked_ deduplicates), the ids
  // read by the last one (view_refreshed_), the positions of the pools with
  // ready work at the last view, ascending (view_busy_), and their views
  // (views_with_work_).
  static constexpr std::uint32_t absent_view = ~std::uint32_t{0};
  std::vector<ext::pool_view> pool_views_, views_with_work_;
  std::vector<std::uint64_t> pool_view_seq_;
  std::vector<std::uint32_t> view_index_, view_dirty_, view_refreshed_, view_busy_;
  std::vector<bool> view_marked_;
  std::vector<std::uint32_t> view_since_tick_;  // ids read since the last quantum tick
  std::vector<bool> view_read_since_tick_;      // by id: in view_since_tick_
  bool pool_views_valid_ = false;
};

}  // namespace promptly::detail
