// What a policy sees and does in one on_event call (ext::decision): the
// live pools, most urgent first, and the cores, as measured by the policy
// thread; and the per-core targets the policy's actions produce, resolved
// into one assignment per core after the call.
//
// Invariants
//  * Built and used on the policy thread only, under policy_mutex_.
//  * An action naming a pool absent from the view but below id_end_ (removed
//    since the event was posted) changes nothing; resolve() never sees it.
//  * resolve() gives every core exactly one assignment: a ranked set of
//    live pools of the view (pools that are gone drop out of a set; a core
//    whose set empties sleeps), asleep, or every pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <unordered_map>
#include <span>
#include <utility>
#include <vector>

#include "assignment.hpp"
#include "promptly/ext/policy.hpp"

namespace promptly::detail {

class decision_impl final : public ext::decision {
 public:
  // from_scratch: every core's target starts asleep (a newly installed
  // policy places every core); otherwise each keeps its current target.
  decision_impl(std::vector<ext::pool_view> pools, std::vector<ext::core_view> cores, std::chrono::microseconds quantum,
                bool from_scratch);
  // On a view the caller keeps (the policy thread's, kept between
  // decisions): `pools` most urgent first, `index_by_id` from pool id to its
  // position in `pools` (>= pools.size(): absent), `with_work` the pools
  // with ready work in the same order. Nothing is copied, so building the
  // decision costs nothing per idle pool.
  decision_impl(std::span<const ext::pool_view> pools, std::span<const std::uint32_t> index_by_id,
                std::vector<ext::pool_view> with_work, std::vector<ext::core_view> cores,
                std::chrono::microseconds quantum, bool from_scratch);

  std::span<const ext::pool_view> pools() const noexcept override { return pools_; }
  std::span<const ext::pool_view> pools_with_work() const noexcept override { return with_work_; }
  const ext::pool_view* find(ext::pool_id id) const noexcept override;
  std::span<const ext::core_view> cores() const noexcept override { return cores_; }
  void give_core(unsigned core, ext::pool_id pool) override;
  void serve(unsigned core, std::span<const ext::pool_id> ranked) override;
  void take_core(unsigned core) override;
  void serve_every_pool(unsigned core) override;
  void allot(ext::pool_id pool, unsigned cores) override;
  void donate_to(ext::pool_id pool) override;
  void set_quantum(std::chrono::microseconds q) override;
  std::chrono::microseconds quantum() const noexcept override { return quantum_; }
  void preempt(ext::pool_id pool) override;
  // The live pools the policy asked to preempt for, in the order asked.
  std::span<const ext::pool_id> preempted() const noexcept { return preempted_; }

  // Every pool id the runtime ever gave is below `end`: an action naming an
  // id below it that is absent from the view (a pool removed since) is
  // ignored, one at or above it is an error. Defaults to one past the
  // largest id of the view with the first constructor; to 0 (every absent
  // id an error) with the kept view's, whose caller sets it (finding the
  // largest id would walk every pool).
  void set_pool_id_end(ext::pool_id end) noexcept { id_end_ = end; }

  // The assignment of every core after the policy acted (see the invariants).
  std::vector<pool_set> resolve() const;

 private:
  std::size_t index_of(ext::pool_id id) const noexcept;  // pools_.size() if absent
  // Absent from the view: false if `id` is live; true if a pool had it
  // (removed since: the action is ignored); throws naming `action` otherwise.
  bool gone(ext::pool_id id, const char* action) const;
  void check_core(unsigned core, const char* action) const;

  void start(bool from_scratch);

  std::vector<ext::pool_view> owned_pools_;        // the first constructor's copy
  std::vector<std::uint32_t> owned_index_;
  std::span<const ext::pool_view> pools_;
  std::span<const std::uint32_t> index_by_id_;  // pool id -> position in pools_ (>= pools_.size(): absent)
  ext::pool_id id_end_ = 0;                      // every id ever given is below it (set_pool_id_end)
  std::vector<ext::pool_view> with_work_;
  std::vector<ext::core_view> cores_;
  std::vector<pool_set> targets_;
  std::vector<bool> explicit_;        // the policy set this core's target in this decision
  // Pool index -> cores allotted, for the pools named (the last call for a
  // pool wins): as large as the pools named, not the pool count nor the
  // number of calls (a batch of events calls allot once per event).
  std::unordered_map<std::size_t, unsigned> counts_;
  bool counted_ = false;              // allot() was called
  ext::pool_id donation_ = ext::no_pool;  // donate_to()
  std::chrono::microseconds quantum_;
  std::vector<ext::pool_id> preempted_;
};

}  // namespace promptly::detail
