// The priority-class rule and the core splits of the job policies
// (job_classes.hpp states the rules and invariants).
#include "job_classes.hpp"

#include <algorithm>

namespace promptly::policy_impl {

std::vector<unsigned> equal_split(std::size_t n, unsigned cores) {
  std::vector<unsigned> out(n, 0);
  if (n == 0) return out;
  const auto each = static_cast<unsigned>(cores / n);
  const auto extra = static_cast<std::size_t>(cores % n);
  for (std::size_t i = 0; i < n; ++i) out[i] = each + (i < extra ? 1u : 0u);
  return out;
}

std::vector<unsigned> deq(std::span<const unsigned> desires, unsigned cores) {
  const std::size_t n = desires.size();
  std::vector<unsigned> out(n, 0);
  std::vector<bool> settled(n, false);
  unsigned left = cores;
  std::size_t open = n;
  // Water filling: each pass settles every pool that desires no more than
  // the even share of what is left; a pass that settles nobody ends it.
  for (bool changed = true; changed && open > 0;) {
    changed = false;
    const unsigned share = left / static_cast<unsigned>(open);
    for (std::size_t i = 0; i < n; ++i) {
      if (settled[i] || desires[i] > share) continue;
      out[i] = desires[i];
      left -= desires[i];
      settled[i] = true;
      --open;
      changed = true;
    }
  }
  if (open == 0) return out;
  // Everyone left desires more than the even share: split evenly, the
  // remainder to the first of them (the oldest), never past a desire.
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < n; ++i)
    if (!settled[i]) rest.push_back(i);
  const std::vector<unsigned> split = equal_split(rest.size(), left);
  for (std::size_t k = 0; k < rest.size(); ++k) out[rest[k]] = std::min(split[k], desires[rest[k]]);
  return out;
}

void allot_counts(ext::decision& d, std::span<const ext::pool_view> pools, std::span<const unsigned> counts) {
  bool named = false;
  for (std::size_t i = 0; i < pools.size(); ++i)
    if (counts[i] > 0) {
      d.allot(pools[i].id, counts[i]);
      named = true;
    }
  if (!named && !d.pools().empty()) d.allot(d.pools().front().id, 0);
}

bool most_urgent_rank(std::span<const ext::pool_view> pools, unsigned& rank) noexcept {
  bool any = false;
  for (const ext::pool_view& p : pools)
    if (p.has_ready_work && (!any || p.rank < rank)) {
      rank = p.rank;
      any = true;
    }
  return any;
}

std::vector<unsigned> serve_by_rank(std::span<const ext::pool_view> pools, unsigned cores, const class_rule& serve) {
  std::vector<unsigned> out(pools.size(), 0);
  std::vector<unsigned> ranks;
  for (const ext::pool_view& p : pools)
    if (p.has_ready_work) ranks.push_back(p.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  unsigned left = cores;
  for (unsigned rank : ranks) {
    if (left == 0) break;
    std::vector<std::size_t> members;
    for (std::size_t i = 0; i < pools.size(); ++i)
      if (pools[i].has_ready_work && pools[i].rank == rank) members.push_back(i);
    std::vector<unsigned> got = serve(members, left);
    got.resize(members.size(), 0);
    // A rule that overspends is cut from its last member back: the class
    // never takes cores it was not offered.
    unsigned sum = 0;
    for (std::size_t k = 0; k < members.size(); ++k) {
      got[k] = std::min(got[k], left - sum);
      sum += got[k];
      out[members[k]] = got[k];
    }
    left -= sum;
  }
  return out;
}

}  // namespace promptly::policy_impl
