// The priority-class rule and the core splits of the job policies
// (job_classes.hpp states the rules and invariants).
#include "job_classes.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

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

std::vector<held_core> held_cores(const ext::decision& d) {
  std::vector<held_core> out;
  for (const ext::core_view& c : d.cores()) {
    if (c.target != ext::core_target::pool || c.serving == c.assigned) continue;
    const ext::pool_view* p = d.find(c.assigned);
    if (p == nullptr || !p->stalled) continue;
    const ext::pool_view* s = d.find(c.serving);
    if (s == nullptr || !s->has_ready_work) continue;  // idle there: it moves at once
    out.push_back({c.index, c.assigned, c.serving});
  }
  return out;
}

bool tick_without_held_cores(const ext::event& ev, const ext::decision& d) {
  return ev.kind == ext::event_kind::quantum && held_cores(d).empty();
}

std::vector<ext::pool_id> pin_held_cores(const ext::decision& d, std::span<const ext::pool_id> order,
                                         std::span<unsigned> counts) {
  assert(order.size() == counts.size());
  std::vector<ext::pool_id> pinned(d.core_count(), ext::no_pool);
  const std::vector<held_core> held = held_cores(d);
  if (held.empty()) return pinned;
#ifndef NDEBUG
  const unsigned offered = std::accumulate(counts.begin(), counts.end(), 0u);
#endif
  auto at = [&](ext::pool_id id) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), id) - order.begin());
  };
  for (const held_core& h : held) {
    const std::size_t p = at(h.assigned);
    if (p == order.size() || counts[p] == 0) continue;  // its pool gets no core now: it moves anyway
    std::size_t to = at(h.holder);
    if (to == order.size() || counts[to] == 0) {
      to = order.size();
      for (std::size_t k = order.size(); k-- > p + 1;)
        if (counts[k] > 0) {
          to = k;
          break;
        }
      if (to == order.size()) continue;  // P is the last served: it waits
    }
    --counts[to];
    pinned[h.core] = order[to];
  }
  assert(offered == std::accumulate(counts.begin(), counts.end(), 0u) +
                        static_cast<unsigned>(std::count_if(pinned.begin(), pinned.end(),
                                                            [](ext::pool_id p) { return p != ext::no_pool; })) &&
         "each pin is taken out of the counts");
  return pinned;
}

std::vector<ext::pool_id> cores_for_counts(std::span<const ext::pool_id> current, std::vector<ext::pool_id> pinned,
                                           std::span<const ext::pool_id> order, std::span<unsigned> counts) {
  assert(order.size() == counts.size() && current.size() == pinned.size());
  std::vector<ext::pool_id>& out = pinned;
  std::vector<bool> placed(out.size());
  for (std::size_t c = 0; c < out.size(); ++c) placed[c] = out[c] != ext::no_pool;
  for (std::size_t c = 0; c < out.size(); ++c) {
    if (placed[c]) continue;
    const auto it = std::find(order.begin(), order.end(), current[c]);
    if (it == order.end() || counts[static_cast<std::size_t>(it - order.begin())] == 0) continue;
    --counts[static_cast<std::size_t>(it - order.begin())];
    out[c] = current[c];
    placed[c] = true;
  }
  std::size_t next = 0;
  for (std::size_t c = 0; c < out.size(); ++c) {
    if (placed[c]) continue;
    while (next < counts.size() && counts[next] == 0) ++next;
    if (next == counts.size()) break;
    --counts[next];
    out[c] = order[next];
  }
  return out;
}

void allot_counts(ext::decision& d, std::span<const ext::pool_view> pools, std::span<const unsigned> counts) {
  std::vector<unsigned> left(counts.begin(), counts.end());
  std::vector<ext::pool_id> order(pools.size());
  for (std::size_t i = 0; i < pools.size(); ++i) order[i] = pools[i].id;
  const std::vector<ext::pool_id> pinned = pin_held_cores(d, order, left);
  bool named = false;
  for (unsigned c = 0; c < pinned.size(); ++c)
    if (pinned[c] != ext::no_pool) {
      d.give_core(c, pinned[c]);
      named = true;
    }
  for (std::size_t i = 0; i < pools.size(); ++i)
    if (counts[i] > 0) {
      d.allot(pools[i].id, left[i]);  // a pool whose pins took its whole count is named with 0
      named = true;
    }
  if (!named && !d.pools().empty()) d.allot(d.pools().front().id, 0);
}

void work_ledger::note(const ext::event& ev, const ext::decision& d) {
  if (ev.kind == ext::event_kind::installed) {
    folded_s_.clear();
    tick_view_ = nullptr;
  }
  if (ev.kind == ext::event_kind::pool_removed) folded_s_.erase(ev.pool);
  const bool folded = tick_view_ != nullptr && tick_view_ == d.pools().data();
  if (ev.kind == ext::event_kind::quantum) {
    // Pools with work only, so that a decision costs what has work, not the
    // pool count (docs/policies.md, "Decision cost").
    if (!folded)
      for (const ext::pool_view& v : d.pools_with_work())
        if (v.work_s > 0) folded_s_[v.id] += v.work_s;
    tick_view_ = d.pools().data();
  } else if (!folded) {
    tick_view_ = nullptr;
  }
  view_folded_ = ev.kind == ext::event_kind::quantum || folded;
}

double work_ledger::done_s(const ext::pool_view& v) const {
  const auto it = folded_s_.find(v.id);
  return (it != folded_s_.end() ? it->second : 0.0) + (view_folded_ ? 0.0 : v.work_s);
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
