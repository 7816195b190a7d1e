// The `serpt` policy: cores to the jobs with the least expected remaining
// work (serpt.hpp states the rules; docs/job-policies.md the contract).
//
// At every decision (job events and quantum ticks) the jobs with work of the
// served class (job_classes.hpp) are put in service order (serpt_rank:
// earliest slowdown deadline first, the due jobs past their share of the
// cores least remaining work first), the machine is split by heSRPT's rule
// over that order with each job capped at the cores its expected remaining
// work can use (capped_split, usable_cores; with linear speedup: each job in
// turn as many cores as it can use), and the fractions become whole cores
// (whole_cores). The cap matters on many cores: a job of 1 ms of work given
// 40 cores spends most of their time waking them and spreading its work
// (promptly-sim: 128 pieces of 10 us run 16x faster on 40 cores, not 40x),
// while the same cores serve the next jobs at full use. Each core then serves a ranked set: its job first,
// then the class's other jobs in service order, so a core whose job has no
// work left to steal helps the next job at once instead of sleeping until
// the next decision (SRPT stays work-conserving when the first job's
// parallelism is below the core count).
//
// Work done: pool_view::work_s counts since the previous quantum tick; a
// work_ledger (job_classes.hpp) sums it over the ticks.
//
// Invariants
//  * served_ names only pools seen live with work (entries of removed pools
//    are dropped at pool_removed; the ledger drops its own).
//  * Every core goes to a job of the served class whenever it has one; a core
//    serves no pool of another class (the class rule).
#include "serpt.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "job_classes.hpp"

namespace promptly::policy_impl {

void size_board::set(ext::pool_id pool, double expected_s) {
  std::lock_guard lock(mu_);
  expected_s_[pool] = expected_s;
}

void size_board::erase(ext::pool_id pool) {
  std::lock_guard lock(mu_);
  expected_s_.erase(pool);
}

void size_board::lookup(std::span<const ext::pool_id> pools, double otherwise, std::vector<double>& out) const {
  out.assign(pools.size(), otherwise);
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < pools.size(); ++i)
    if (auto it = expected_s_.find(pools[i]); it != expected_s_.end()) out[i] = it->second;
}

std::size_t size_board::size() const {
  std::lock_guard lock(mu_);
  return expected_s_.size();
}

void validate(const serpt_params& p) {
  if (!(p.speedup_exponent > 0 && p.speedup_exponent <= 1))
    throw std::invalid_argument("promptly: serpt speedup_exponent = " + std::to_string(p.speedup_exponent) +
                                " must be in (0, 1]");
  if (!(p.prior_s > 0 && std::isfinite(p.prior_s)))
    throw std::invalid_argument("promptly: serpt prior_s = " + std::to_string(p.prior_s) + " must be finite and > 0");
  if (!(p.slowdown_cap >= 1))
    throw std::invalid_argument("promptly: serpt slowdown_cap = " + std::to_string(p.slowdown_cap) + " must be >= 1");
  if (!(p.due_core_share > 0 && p.due_core_share <= 1))
    throw std::invalid_argument("promptly: serpt due_core_share = " + std::to_string(p.due_core_share) +
                                " must be in (0, 1]");
  if (p.work_per_core.count() < 0) throw std::invalid_argument("promptly: serpt work_per_core must be >= 0");
  if (p.start_wait_bound.count() <= 0) throw std::invalid_argument("promptly: serpt start_wait_bound must be > 0");
  if (p.quantum.count() <= 0) throw std::invalid_argument("promptly: serpt quantum must be > 0");
}

double expected_remaining(double expected_s, double done_s) noexcept {
  if (done_s < expected_s) return expected_s - done_s;
  if (!(expected_s > 0) || !std::isfinite(done_s)) return done_s;
  double next = expected_s * std::exp2(std::floor(std::log2(done_s / expected_s)) + 1);
  if (next <= done_s) next *= 2;  // log2's rounding
  return next - done_s;
}

serpt_tier tier_of(const serpt_job& j, const serpt_params& p) noexcept {
  const double bound_s = std::chrono::duration<double>(p.start_wait_bound).count();
  if (!j.ever_served && j.age_s >= bound_s) return serpt_tier::start_wait;
  return serpt_tier::slowdown_deadline;
}

unsigned usable_cores(double remaining_s, const serpt_params& p, unsigned cores) noexcept {
  cores = std::max(cores, 1u);
  const double per_core_s = std::chrono::duration<double>(p.work_per_core).count();
  if (!(per_core_s > 0)) return cores;
  const double want = std::ceil(remaining_s / per_core_s - 1e-9);
  return want >= cores ? cores : want <= 1 ? 1u : static_cast<unsigned>(want);
}

double slowdown_deadline_s(const serpt_job& j, const serpt_params& p, unsigned cores) noexcept {
  const double remaining_s = expected_remaining(j.expected_s, j.done_s);
  const double alone_s = remaining_s / usable_cores(remaining_s, p, cores);
  return p.slowdown_cap * alone_s - j.age_s;
}

serpt_ranking serpt_rank(std::span<const serpt_job> jobs, const serpt_params& p, unsigned cores) {
  cores = std::max(cores, 1u);
  // Tiers of the order, first served first.
  enum class rank : std::uint8_t { start_wait, due_in_share, due, not_due };
  struct key {
    rank tier;
    double primary;  // smaller first: -age (start_wait), the deadline (due_in_share, not_due), remaining (due)
    double age_s;
  };
  std::vector<key> keys(jobs.size());
  std::vector<unsigned> usable(jobs.size());
  std::vector<double> remaining(jobs.size());
  std::vector<std::size_t> due;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const serpt_job& j = jobs[i];
    remaining[i] = expected_remaining(j.expected_s, j.done_s);
    usable[i] = usable_cores(remaining[i], p, cores);
    if (tier_of(j, p) == serpt_tier::start_wait) {
      keys[i] = {rank::start_wait, -j.age_s, j.age_s};
      continue;
    }
    const double deadline = slowdown_deadline_s(j, p, cores);
    keys[i] = {rank::not_due, deadline, j.age_s};
    if (deadline < 0) due.push_back(i);
  }
  // The due jobs within the share, earliest deadline first, capped so that
  // together they can use no more than the share.
  const auto within_tier = [&](std::size_t a, std::size_t b) {
    if (keys[a].primary != keys[b].primary) return keys[a].primary < keys[b].primary;
    return keys[a].age_s > keys[b].age_s;
  };
  std::stable_sort(due.begin(), due.end(), within_tier);
  // A lone due job may use every core: the share keeps deadline order among
  // many due jobs from becoming arrival order, and one due job has no such
  // order. Served at full speed it finishes instead of lingering at the tail.
  const unsigned share = due.size() == 1 ? cores
                                         : static_cast<unsigned>(std::max(1.0, std::floor(p.due_core_share * cores + 1e-9)));
  unsigned given = 0;
  for (const std::size_t i : due) {
    if (given < share) {
      keys[i].tier = rank::due_in_share;
      usable[i] = std::min(usable[i], share - given);
      given += usable[i];
    } else {
      keys[i] = {rank::due, remaining[i], keys[i].age_s};
    }
  }
  serpt_ranking out;
  out.order.resize(jobs.size());
  std::iota(out.order.begin(), out.order.end(), std::size_t{0});
  std::stable_sort(out.order.begin(), out.order.end(), [&](std::size_t a, std::size_t b) {
    if (keys[a].tier != keys[b].tier) return keys[a].tier < keys[b].tier;
    return within_tier(a, b);
  });
  out.usable.resize(jobs.size());
  for (std::size_t k = 0; k < out.order.size(); ++k) out.usable[k] = usable[out.order[k]];
  return out;
}

std::vector<std::size_t> serpt_order(std::span<const serpt_job> jobs, const serpt_params& p, unsigned cores) {
  return serpt_rank(jobs, p, cores).order;
}

std::vector<double> hesrpt_split(std::span<const double> weights, double p) {
  const std::size_t m = weights.size();
  std::vector<double> out(m, 0.0);
  if (m == 0) return out;
  if (p >= 1) {
    out[0] = 1;  // SRPT: the limit of the rule as p -> 1
    return out;
  }
  // Renumbered largest first: i = 1 is the input's last job, i = m its first.
  const double e = 1.0 / (1.0 - p);
  double z_m = 0;
  for (double w : weights) z_m += w;
  double z_prev = 0;
  for (std::size_t i = 1; i <= m; ++i) {
    const std::size_t at = m - i;  // input index of the i-th largest
    const double z_i = z_prev + weights[at];
    out[at] = std::pow(z_i / z_m, e) - std::pow(z_prev / z_m, e);
    z_prev = z_i;
  }
  return out;
}

std::vector<double> capped_split(std::span<const double> usable, double p) {
  const std::size_t m = usable.size();
  std::vector<double> out(m, 0.0);
  double left = 1;  // of the machine, not yet given
  // Each pass walks the jobs with room left in order, giving each the
  // smaller of its room and heSRPT's share of what is left among it and the
  // jobs with room after it. A pass gives everything or fills a job, so at
  // most m passes.
  for (std::size_t pass = 0; pass < m && left > 1e-12; ++pass) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < m; ++i)
      if (usable[i] - out[i] > 1e-12) open.push_back(i);
    if (open.empty()) break;
    const std::vector<double> full = hesrpt_split(std::vector<double>(open.size(), 1.0), p);
    double tail = 1;  // full[k] + .. : the share of the jobs from k on
    for (std::size_t k = 0; k < open.size() && left > 1e-12; ++k) {
      // heSRPT's share of job k among jobs k..: 1 for the last, and under
      // linear speedup for every job after the first (tail 0).
      const double share = tail > 1e-12 ? full[k] / tail : 1.0;
      const std::size_t i = open[k];
      const double give = std::clamp(std::min(usable[i] - out[i], left * share), 0.0, left);
      out[i] += give;
      left -= give;
      tail -= full[k];
    }
  }
  if (left > 1e-12) {  // every cap binds
    const std::vector<double> full = hesrpt_split(std::vector<double>(m, 1.0), p);
    for (std::size_t i = 0; i < m; ++i) out[i] += left * full[i];
  }
  return out;
}

std::vector<unsigned> whole_cores(std::span<const double> fractions, unsigned cores) {
  std::vector<unsigned> out(fractions.size(), 0);
  std::vector<double> rest(fractions.size(), 0.0);
  unsigned given = 0;
  for (std::size_t i = 0; i < fractions.size(); ++i) {
    const double share = std::max(0.0, fractions[i]) * cores;
    out[i] = static_cast<unsigned>(std::floor(share + 1e-9));
    if (given + out[i] > cores) out[i] = cores - given;
    given += out[i];
    rest[i] = share - out[i];
  }
  while (given < cores && !fractions.empty()) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < rest.size(); ++i)
      if (rest[i] > rest[best] + 1e-12) best = i;
    if (rest[best] <= -1.0) break;  // nothing left to round up
    ++out[best];
    rest[best] = -2.0;  // one extra core per job
    ++given;
  }
  return out;
}

namespace {

class serpt_policy final : public ext::policy {
 public:
  serpt_policy(const serpt_params& p, std::shared_ptr<const size_board> sizes) : p_(p), sizes_(std::move(sizes)) {
    validate(p_);
  }
  std::string_view name() const noexcept override { return "serpt"; }
  // Ranks change with the work done while only one job runs too (a job
  // passing its estimate, or the one waiting reaching a bound).
  bool ticks_while_one_pool_is_busy() const noexcept override { return true; }

  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::installed) {
      d.set_quantum(p_.quantum);
      served_.clear();
    }
    if (ev.kind == ext::event_kind::pool_removed) served_.erase(ev.pool);
    work_.note(ev, d);
    const auto pools = d.pools_with_work();

    // The served class, its jobs in list order.
    unsigned served_rank = 0;
    const unsigned cores = d.core_count();
    if (!most_urgent_rank(pools, served_rank)) {
      for (unsigned c = 0; c < cores; ++c) d.take_core(c);
      return;
    }
    std::vector<ext::pool_id> ids;
    for (const ext::pool_view& v : pools)
      if (v.rank == served_rank) ids.push_back(v.id);
    std::vector<double> expected;
    if (sizes_)
      sizes_->lookup(ids, p_.prior_s, expected);
    else
      expected.assign(ids.size(), p_.prior_s);
    std::vector<serpt_job> jobs(ids.size());
    {
      std::size_t k = 0;
      for (const ext::pool_view& v : pools) {
        if (v.rank != served_rank) continue;
        serpt_job& j = jobs[k];
        j.expected_s = expected[k];
        j.done_s = work_.done_s(v);
        j.age_s = std::chrono::duration<double>(v.age).count();
        j.ever_served = served_.contains(v.id) || v.cores > 0;
        ++k;
      }
    }
    const serpt_ranking ranking = serpt_rank(jobs, p_, cores);
    const std::vector<std::size_t>& order = ranking.order;
    // What each job can use, as a fraction of the machine.
    std::vector<double> usable(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) usable[i] = static_cast<double>(ranking.usable[i]) / cores;
    const std::vector<double> fractions = capped_split(usable, p_.speedup_exponent);
    std::vector<unsigned> counts = whole_cores(fractions, cores);
    // Ordered pools and their counts; a core keeps its pool while it has
    // room, a core held by another job's strand is counted where it is
    // (job_classes.hpp, "Held cores").
    std::vector<ext::pool_id> ranked(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) ranked[i] = ids[order[i]];
    std::vector<ext::pool_id> current(cores);
    const auto cv = d.cores();
    for (unsigned c = 0; c < cores; ++c) current[c] = cv[c].assigned;
    std::vector<ext::pool_id> pinned = pin_held_cores(d, ranked, counts);
    const std::vector<ext::pool_id> own = cores_for_counts(current, std::move(pinned), ranked, counts);
    std::vector<int> owner(cores, -1);  // index into ranked
    for (unsigned c = 0; c < cores; ++c)
      if (own[c] != ext::no_pool)
        owner[c] = static_cast<int>(std::find(ranked.begin(), ranked.end(), own[c]) - ranked.begin());
    std::vector<ext::pool_id> set;
    for (unsigned c = 0; c < cores; ++c) {
      if (owner[c] < 0) {
        // Unreachable while whole_cores hands out every core; kept so that no
        // core is left serving a pool of another class.
        d.serve(c, std::span<const ext::pool_id>(ranked.data(), std::min(ranked.size(), ext::max_ranked_pools)));
        served_.insert(ranked.front());
        continue;
      }
      const auto mine = static_cast<std::size_t>(owner[c]);
      set.clear();
      set.push_back(ranked[mine]);
      for (std::size_t i = 0; i < ranked.size() && set.size() < ext::max_ranked_pools; ++i)
        if (i != mine) set.push_back(ranked[i]);
      d.serve(c, set);
      served_.insert(ranked[mine]);
    }
  }

 private:
  serpt_params p_;
  std::shared_ptr<const size_board> sizes_;
  work_ledger work_;                                 // work done, by pool
  std::unordered_set<ext::pool_id> served_;          // pools given a core by some decision
};

}  // namespace

std::unique_ptr<ext::policy> make_serpt_policy(const serpt_params& p, std::shared_ptr<const size_board> sizes) {
  return std::make_unique<serpt_policy>(p, std::move(sizes));
}

}  // namespace promptly::policy_impl
