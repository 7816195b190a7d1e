// Waking one waiting worker of a sleep domain (sleep_protocol.hpp states
// the invariants).
#include "sleep_protocol.hpp"

namespace promptly::detail {

// Starts at a rotating worker, so that wake-ups spread over the workers of
// a domain instead of always finding the lowest-numbered waiter.
bool sleep_protocol::notify_matching(std::uint32_t pool, bool thieves_only, const worker* except) noexcept {
  notifier::fence_before_notify();
  const std::size_t n = workers_.size();
  static thread_local unsigned rotor = 0;
  const unsigned start = rotor++;
  for (std::size_t k = 0; k < n; ++k) {
    worker& v = *workers_[(start + k) % n];
    if (&v == except) continue;
    unsigned word = assignment_of(v.assigned.load(std::memory_order_seq_cst));  // seq-cst: the waiter re-reads it after prepare_wait
    if (word == no_pool) continue;  // asleep by the policy's choice: a wake-up would be swallowed
    bool match = false;
    if (!(word & published_bit)) {
      match = word == pool;  // a one-pool set (never every_domain: pool ids are below it)
    } else {
      const pool_set s = read_assignment(v, word);
      match = pool == every_domain ? s.every() : s.every() ? !thieves_only : s.contains(pool);
    }
    if (match && notifier::notify(v.slot)) return true;
  }
  return false;
}

}  // namespace promptly::detail
