// The wake side of Taskflow's sleep protocol ("An Efficient Work-Stealing
// Scheduler for Task Dependency Graph", Algorithms 1, 3 and 5) over the
// workers' ranked sets: the sleep domains, their Taskflow counters, and
// waking one waiting worker of a domain. The waiting side (a thief's
// explore, prepare, re-check, commit) is the scheduling loop's
// (scheduling_loop.cpp); the slots are the notifier's (notifier.hpp).
//
// A sleep domain is a pool (its thieves are the waiting workers whose set
// holds it; its counters are pool_record::num_actives and num_thieves) or
// every pool (every_domain: the waiting workers serving every pool; its
// counters are here). A worker serving every pool and active at pool P
// counts in P's num_actives and in the every-pool domain's.
//
// Invariants (asserted in the Debug build)
//  * A domain's counters never go negative: a decrement follows the
//    increment it undoes, on the domain the increment counted in.
//  * No wake-up is swallowed: a wake goes only to a worker whose published
//    assignment holds the domain, never to one the policy put to sleep
//    (no_pool), which would not look for the work; and it is issued after
//    notifier::fence_before_notify, so a waiter that prepared its wait
//    before the work appeared is seen (notifier.hpp).
//  * Lemma 1 per domain (src/sched/README.md): the first worker to become
//    active in a domain with no thief wakes one (become_active); the last
//    thief's hand-over is the loop's, through notify_thief_of.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <vector>

#include "pool.hpp"
#include "worker.hpp"

namespace promptly::detail {

class sleep_protocol {
 public:
  // The sleep domain of the workers that serve every pool, named like a pool.
  static constexpr std::uint32_t every_domain = max_pools;

  // A domain's Taskflow counters.
  struct domain {
    std::atomic<int>* actives;
    std::atomic<int>* thieves;
    std::uint32_t id;
  };

  // `workers` is the scheduler's, filled before any wake.
  explicit sleep_protocol(const std::vector<std::unique_ptr<worker>>& workers) noexcept : workers_(workers) {}
  sleep_protocol(const sleep_protocol&) = delete;
  sleep_protocol& operator=(const sleep_protocol&) = delete;

  static domain of(pool_record& p) noexcept { return {&p.num_actives, &p.num_thieves, p.id}; }
  domain every() noexcept { return {&every_actives_, &every_thieves_, every_domain}; }

  // Algorithm 3, lines 2-3: counts a worker active in d; the first active
  // worker of a domain with no thief wakes one (`wake`: the adaptive sleep
  // mode; the never-sleeping baseline has nobody to wake).
  void become_active(domain d, bool wake) noexcept {
    if (d.actives->fetch_add(1, std::memory_order_seq_cst) == 0 && wake && d.thieves->load(std::memory_order_seq_cst) == 0)
      notify_thief_of(d.id);
  }
  // Algorithm 3, line 13. Returns the count before.
  int become_inactive(domain d) noexcept {
    const int before = d.actives->fetch_sub(1, std::memory_order_seq_cst);
    assert(before > 0 && "num_actives never goes negative");
    return before;
  }

  // Wakes one waiting worker whose set holds `pool` (a worker serving every
  // pool too; for every_domain, one serving every pool): work arrived there. True if it woke one.
  bool notify_pool(std::uint32_t pool) noexcept { return notify_matching(pool, false, nullptr); }
  // Wakes one waiting worker counted among the thieves of domain `id` (a pool:
  // a worker whose ranked set holds it; every_domain: one serving every
  // pool): Lemma 1's hand-over.
  void notify_thief_of(std::uint32_t id) noexcept { notify_matching(id, true, nullptr); }
  // As notify_pool, but never `except` (a waiter passing a wake-up on).
  void notify_other(std::uint32_t pool, const worker& except) noexcept { notify_matching(pool, false, &except); }

 private:
  bool notify_matching(std::uint32_t pool, bool thieves_only, const worker* except) noexcept;

  const std::vector<std::unique_ptr<worker>>& workers_;
  alignas(64) std::atomic<int> every_actives_{0};
  alignas(64) std::atomic<int> every_thieves_{0};
};

}  // namespace promptly::detail
