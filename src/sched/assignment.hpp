// A core's assignment: a ranked set of pools (most urgent first), every pool
// (in no order: the priority-oblivious baseline), or none (the core sleeps);
// and how the policy thread publishes it to the worker and to the threads
// that wake workers (src/sched/README.md, "Assignments").
//
// Invariants
//  * A `pools` set holds 1..max_ranked_pools distinct ids, in rank order.
//  * The assignment word (worker_view::assigned) names the set: no_pool
//    (asleep), a pool id (a one-pool set: the common case needs no other
//    memory), or published_bit | version, whose set is in the worker's
//    published_set buffer (version & 1). Only the policy thread, holding
//    policy_mutex_, writes a buffer and the word.
//  * Double buffering makes a reader's copy consistent without a lock: the
//    writer of version v+1 fills buffer (v+1) & 1, which no reader of version
//    v reads; the writer of v+2 refills buffer v & 1 only after publishing
//    v+1, behind a release fence, so a reader of v that saw any of those
//    writes sees, after its acquire fence, a word other than v and retries
//    (read_published in scheduler.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <span>

#include "event_bitmap.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/ext/policy.hpp"

namespace promptly::detail {

inline constexpr std::size_t max_ranked_pools = ext::max_ranked_pools;

struct pool_set {
  enum class kind : std::uint8_t { asleep, pools, every };
  kind what = kind::asleep;
  std::uint8_t count = 0;
  std::array<std::uint32_t, max_ranked_pools> ids{};

  static pool_set none() noexcept { return {}; }
  static pool_set one(std::uint32_t id) noexcept {
    pool_set s;
    s.what = kind::pools;
    s.count = 1;
    s.ids[0] = id;
    return s;
  }
  static pool_set every_pool() noexcept {
    pool_set s;
    s.what = kind::every;
    return s;
  }
  // Callers validated the ids (decision_impl::serve).
  static pool_set ranked(std::span<const std::uint32_t> ids) noexcept {
    pool_set s;
    s.what = ids.empty() ? kind::asleep : kind::pools;
    s.count = static_cast<std::uint8_t>(std::min(ids.size(), max_ranked_pools));
    std::copy_n(ids.begin(), s.count, s.ids.begin());
    return s;
  }

  bool asleep() const noexcept { return what == kind::asleep; }
  bool every() const noexcept { return what == kind::every; }
  std::span<const std::uint32_t> ranked_ids() const noexcept { return {ids.data(), count}; }
  // The most urgent pool of a ranked set, else no_pool.
  std::uint32_t first() const noexcept { return what == kind::pools ? ids[0] : no_pool; }
  bool contains(std::uint32_t id) const noexcept {
    if (what == kind::every) return true;
    for (std::uint8_t i = 0; i < count; ++i)
      if (ids[i] == id) return true;
    return false;
  }
  ext::core_target target() const noexcept {
    return what == kind::pools ? ext::core_target::pool : what == kind::every ? ext::core_target::every_pool : ext::core_target::asleep;
  }
  friend bool operator==(const pool_set& a, const pool_set& b) noexcept {
    return a.what == b.what && a.count == b.count && std::equal(a.ids.begin(), a.ids.begin() + a.count, b.ids.begin());
  }
};

// The word bit that says "the set is in the worker's published_set".
// Pool ids stay below it (max_pools), decide_request is above it.
inline constexpr unsigned published_bit = 1u << 29;
static_assert(published_bit < decide_request && (published_bit & decide_request) == 0);
static_assert(max_pools <= donated_mark && donated_mark < published_bit, "pool ids < donated_mark < published_bit");

// The assignment word without the decide_request bit.
constexpr unsigned assignment_of(unsigned word) noexcept { return word == no_pool ? no_pool : word & ~decide_request; }

// The worker's double-buffered copy of its multi-pool (or every-pool) set.
struct published_set {
  static constexpr std::uint8_t every_count = 0xFF;
  std::atomic<std::uint32_t> ids[2][max_ranked_pools]{};
  std::atomic<std::uint8_t> count[2]{};
  std::uint32_t version = 0;  // the policy thread's (policy_mutex_)

  // Fills the next buffer and returns the word naming it; the caller stores
  // the word (seq-cst) afterwards.
  unsigned publish(const pool_set& s) noexcept {
    version = (version + 1) & (donated_mark - 1);  // below the boundary word's donated_mark
    const unsigned b = version & 1;
    // Release: a reader that sees any of the stores below sees, after its
    // acquire fence, the word stored before them (the invariant above).
    std::atomic_thread_fence(std::memory_order_release);
    for (std::uint8_t i = 0; i < s.count; ++i) ids[b][i].store(s.ids[i], std::memory_order_relaxed);  // relaxed: ordered by the fences
    count[b].store(s.every() ? every_count : s.count, std::memory_order_relaxed);
    return published_bit | version;
  }
  // The set in buffer `word & 1`; the caller re-checks the word after an acquire fence.
  pool_set read(unsigned word) const noexcept {
    const unsigned b = word & 1;
    const std::uint8_t n = count[b].load(std::memory_order_relaxed);  // relaxed: validated by the caller's re-check
    if (n == every_count) return pool_set::every_pool();
    pool_set s;
    s.what = pool_set::kind::pools;
    s.count = std::min<std::uint8_t>(n, max_ranked_pools);
    for (std::uint8_t i = 0; i < s.count; ++i) s.ids[i] = ids[b][i].load(std::memory_order_relaxed);
    return s;
  }
};

}  // namespace promptly::detail
