// The `fair` policy: fairly prompt scheduling ("Fairness in Responsive
// Parallelism", Sec. 4). The rules and why they differ from the paper's in
// two places are in fair.hpp.
//
// Invariants
//  * live_[id] holds exactly for the pools live at the last decision that
//    read them: every pool at installation and at ticks, the event's pool
//    and the pools with work in between (pools come and go by events).
//    total_weight_ and live_count_ are the sum of weight_ and the count
//    over the live pools, so F(p) = weight_[p] / total_weight_ sums to 1.
//  * primaries_ (by pool id) holds the last round's draws of the pools
//    still live, primaries_sum_ their sum (the worker count of that round
//    less the draws of pools removed since): the primaries of pools without
//    work are primaries_sum_ less those of the pools with work, so a
//    decision between rounds reads no idle pool.
//  * credit_ is each pool's credit at last_tick_, within [-floor, +cap]:
//    cap = one round of one worker, floor = debt_rounds of them; decisions between ticks add the accrual
//    since last_tick_ and subtract the work the driver reports since then
//    (its stats cover the interval since the last quantum tick). Ticks
//    bring every pool's credit forward; last_credit_ (stats) is a pool's
//    credit at the last decision that read it.
//  * sampled_ and received_ only grow while a pool lives; they count since
//    construction, and a new criterion builds a new policy
//    (runtime::set_fairness). A removed pool's entries are cleared.
//    sampled_total_ and received_total_ are their sums over the live pools.
//    sampled_ counts worker-rounds in both modes: P per round under
//    systematic sampling, one per worker's draw under independent sampling.
//  * Independent sampling: core_primary_[c] is a pool that was live at the
//    last decision, drawn at core c's last round boundary (or, if its pool
//    went away, at the decision that noticed); core_round_end_[c] is c's
//    next boundary, on c's own grid of whole rounds from its first one.
//    credit_ is kept as accounting (what each pool is owed) but never spent:
//    the paper's rule has no claims.
#include "fair.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace promptly::policy_impl {

void sample_primaries(std::span<const double> shares, unsigned workers, double u,
                      std::span<unsigned> primaries) noexcept {
  std::fill(primaries.begin(), primaries.end(), 0u);
  if (shares.empty() || workers == 0) return;
  std::size_t last_positive = 0;
  for (std::size_t p = 0; p < shares.size(); ++p)
    if (shares[p] > 0) last_positive = p;
  std::size_t p = 0;
  double cumulative = shares[0];
  for (unsigned i = 0; i < workers; ++i) {
    const double x = (u + i) / workers;  // increasing in i: one sweep over the pools
    while (p < last_positive && !(x < cumulative)) cumulative += shares[++p];
    ++primaries[p];  // rounding can leave x past the last bound: the last positive pool takes it
  }
}

void allot_fair_with_work(std::span<const unsigned> primaries, std::span<const double> credit_s,
                          unsigned idle_primaries, std::span<unsigned> allotment) noexcept {
  const std::size_t pools = primaries.size();
  std::copy(primaries.begin(), primaries.end(), allotment.begin());
  unsigned donated = idle_primaries;
  allotment[0] += donated;  // Sec. 3.1: donation to the highest available priority

  for (std::size_t p = 0; p < pools; ++p) {
    if (allotment[p] > 0 || !(credit_s[p] > 0)) continue;
    std::size_t victim = pools;
    if (donated > 0) {
      victim = 0;  // a donated worker: taking it costs no pool its own share
      --donated;
    } else {
      // The pool with the least credit (the least urgent among equals), if
      // it is less owed than p.
      for (std::size_t v = pools; v-- > 0;)
        if (v != p && allotment[v] > 0 && credit_s[v] < credit_s[p] &&
            (victim == pools || credit_s[v] < credit_s[victim]))
          victim = v;
    }
    if (victim == pools) continue;
    --allotment[victim];
    allotment[p] = 1;
  }
}

void allot_fair(std::span<const unsigned> primaries, std::span<const double> credit_s,
                std::span<const ext::pool_view> stats, unsigned workers, std::span<unsigned> allotment) {
  std::fill(allotment.begin(), allotment.end(), 0u);
  std::vector<std::size_t> busy;  // positions of the pools with work, most urgent first
  std::vector<unsigned> busy_primaries;
  std::vector<double> busy_credit;
  unsigned idle = 0;
  for (std::size_t p = 0; p < stats.size(); ++p) {
    if (!stats[p].has_ready_work) {
      idle += primaries[p];
      continue;
    }
    busy.push_back(p);
    busy_primaries.push_back(primaries[p]);
    busy_credit.push_back(credit_s[p]);
  }
  if (busy.empty()) {
    if (!stats.empty()) allotment[0] = workers;
    return;
  }
  std::vector<unsigned> busy_allotment(busy.size());
  allot_fair_with_work(busy_primaries, busy_credit, idle, busy_allotment);
  for (std::size_t i = 0; i < busy.size(); ++i) allotment[busy[i]] = busy_allotment[i];
}

std::size_t draw_primary(std::span<const double> shares, double u) noexcept {
  std::size_t last_positive = 0;
  for (std::size_t p = 0; p < shares.size(); ++p)
    if (shares[p] > 0) last_positive = p;
  double cumulative = 0;
  for (std::size_t p = 0; p < last_positive; ++p) {
    cumulative += shares[p];
    if (shares[p] > 0 && u < cumulative) return p;
  }
  return last_positive;  // also where rounding leaves u past the last bound
}

std::vector<std::vector<ext::pool_id>> independent_sets(std::span<const ext::pool_id> primary,
                                                        std::span<const ext::pool_view> with_work) {
  std::vector<std::vector<ext::pool_id>> sets(primary.size());
  for (std::size_t c = 0; c < primary.size(); ++c) {
    sets[c].push_back(primary[c]);
    // Fig. 2 lines 28-30: the primary first, else the highest available
    // priority; with no work anywhere the worker waits at its primary.
    if (!with_work.empty() && with_work.front().id != primary[c]) sets[c].push_back(with_work.front().id);
  }
  return sets;
}

std::chrono::microseconds independent_tick(std::chrono::microseconds round, unsigned workers) noexcept {
  using std::chrono::microseconds;
  const microseconds floor = std::min(round, microseconds{1000});
  return std::max(round / std::max(1u, workers), floor);
}

namespace {

using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

class fair_policy final : public ext::policy {
 public:
  fair_policy(const ext::fair_params& params, std::uint64_t seed, clock_fn now)
      : round_(params.round),
        sampling_(params.sampling),
        cap_s_(std::chrono::duration<double>(params.round).count()),
        floor_s_(-debt_rounds * cap_s_),
        rng_(seed),
        now_(std::move(now)) {}

  std::string_view name() const noexcept override { return "fair"; }

  // A pool whose cores (primary or donated) are held by other pools' strands gets a standby
  // (src/sched/README.md, "Preemption"); the round's accounting is not touched.
  bool wants_strand_events() const noexcept override { return true; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::waiting_behind_strands) {
      d.preempt(ev.pool);
      return;
    }
    const unsigned workers = d.core_count();
    const bool installed = ev.kind == ext::event_kind::installed;
    if (installed)
      d.set_quantum(sampling_ == promptly::fair_sampling::independent ? independent_tick(round_, workers) : round_);
    const auto now = now_();
    const bool first = !started_;
    if (first) {
      started_ = true;
      last_tick_ = now;
    }
    const bool tick = ev.kind == ext::event_kind::quantum;
    // Both samplings read every pool only at installation and at ticks (a
    // new round), and independent sampling also where a worker draws (its
    // round boundary, or its primary's pool went away): the draw is over
    // every pool. Other events cost the pools with work and the event's pool.
    const bool independent = sampling_ == promptly::fair_sampling::independent;
    const bool restart = installed || first;
    const bool draws = independent && (restart || draw_due(d, now));
    const bool every_pool = restart || tick || draws;
    if (every_pool)
      learn_every_pool(d.pools());
    else
      learn_pool(ev, d);
    if (tick) end_quantum(d, now);
    if (independent) {
      decide_independent(d, now, restart, draws);
    } else {
      decide_systematic(d, first || tick || installed, tick, now);
    }
  }

  ext::fair_account fairness(ext::pool_id pool) const noexcept override {
    ext::fair_account a;
    if (pool >= live_.size() || !live_[pool]) return a;
    a.share = share_of(pool);
    // Totals kept beside the per-pool counts: stats() asks for every pool.
    a.sampled_share = sampled_total_ > 0 ? static_cast<double>(sampled_[pool]) / static_cast<double>(sampled_total_) : 0.0;
    a.received_share = received_total_ > 0 ? received_[pool] / received_total_ : 0.0;
    a.credit_s = last_credit_[pool];
    return a;
  }

 private:
  // Over-service is remembered for this many rounds of one worker: a pool
  // that sampling (or donation) served above its share claims nothing until
  // it is owed again. A floor of only one round would forgive the excess of
  // every lucky round and, with claims, push the pool above F (measured:
  // 0.33 instead of 0.25 received under 1-3 with a floor of one round).
  static constexpr double debt_rounds = 100;
  using time_point = std::chrono::steady_clock::time_point;

  void grow(std::size_t end) {
    if (live_.size() >= end) return;
    live_.resize(end, false);
    weight_.resize(end, 0.0);
    credit_.resize(end, 0.0);
    last_credit_.resize(end, 0.0);
    received_.resize(end, 0.0);
    primaries_.resize(end, 0);
    sampled_.resize(end, 0);
    cpu_weighted_.resize(end, 0.0);
    cpu_wall_.resize(end, 0.0);
  }

  void add(const ext::pool_view& p) {
    grow(std::size_t{p.id} + 1);
    if (live_[p.id]) return;
    live_[p.id] = true;
    weight_[p.id] = p.weight;
    total_weight_ += p.weight;
    ++live_count_;
  }

  void forget(ext::pool_id pool) {
    if (pool >= live_.size() || !live_[pool]) return;
    live_[pool] = false;
    total_weight_ -= weight_[pool];
    --live_count_;
    primaries_sum_ -= primaries_[pool];
    sampled_total_ -= sampled_[pool];
    received_total_ -= received_[pool];
    weight_[pool] = credit_[pool] = last_credit_[pool] = received_[pool] = 0;
    primaries_[pool] = 0;
    sampled_[pool] = 0;
  }

  // The criterion, F(p) = weight / total weight of the live pools.
  double share_of(ext::pool_id pool) const noexcept {
    if (pool >= live_.size() || !live_[pool]) return 0.0;
    if (total_weight_ > 0) return weight_[pool] / total_weight_;
    return live_count_ > 0 ? 1.0 / static_cast<double>(live_count_) : 0.0;
  }

  // The live pools and their weights, read again from the whole view.
  void learn_every_pool(std::span<const ext::pool_view> pools) {
    std::size_t end = 0;
    for (const ext::pool_view& p : pools) end = std::max(end, std::size_t{p.id} + 1);
    grow(end);
    std::vector<bool> present(live_.size(), false);
    for (const ext::pool_view& p : pools) present[p.id] = true;
    for (std::size_t id = 0; id < live_.size(); ++id)
      if (live_[id] && !present[id]) forget(static_cast<ext::pool_id>(id));
    total_weight_ = 0;
    live_count_ = 0;
    for (const ext::pool_view& p : pools) {
      live_[p.id] = true;
      weight_[p.id] = p.weight;
      total_weight_ += p.weight;
      ++live_count_;
    }
  }

  // What one event changes: its pool came or went (its weight joins or
  // leaves the total). The runtime tells removals before additions of a
  // reused id (policy.hpp).
  void learn_pool(const ext::event& ev, const ext::decision& d) {
    if (ev.pool == ext::no_pool) return;
    if (ev.kind == ext::event_kind::pool_removed) {
      forget(ev.pool);
      return;
    }
    if (const ext::pool_view* p = d.find(ev.pool))
      add(*p);
    else
      forget(ev.pool);  // gone since the event was posted
  }

  // A pool's credit now: its credit at the last tick, plus its share of
  // the workers since, minus the work the driver reports since (choice 2 in
  // fair.hpp), clamped to [-floor, +cap]. At a tick (`folded`) credit_
  // already holds it.
  double credit_now(const ext::pool_view& p, unsigned workers, time_point now, bool folded) const {
    if (folded) return credit_[p.id];
    const double elapsed = std::chrono::duration<double>(now - last_tick_).count();
    return std::clamp(credit_[p.id] + share_of(p.id) * workers * elapsed - p.work_s, floor_s_, cap_s_);
  }

  // A quantum tick: every pool's credit and received work are brought up
  // to now (once per round, not per event).
  //
  // Received work is CPU time where it can be told (the paper's share is of
  // processor time, "Fairness in Responsive Parallelism", Sec. 3): a core
  // the OS preempted is working by the wall clock. The view's per-pool
  // wall work is scaled by the CPU fraction of the cores that served the
  // pool (those whose ranked set holds it), from each core's thread CPU
  // clock at the tick. Credit, which decisions between ticks spend, stays
  // in wall time: CPU time is read only at ticks.
  void end_quantum(const ext::decision& d, time_point now) {
    const unsigned workers = d.core_count();
    std::vector<ext::pool_id> measured;
    for (const ext::core_view& c : d.cores()) {
      if (c.target != ext::core_target::pool || !(c.work_s > 0)) continue;
      const double cpu_fraction = std::min(c.cpu_s, c.work_s) / c.work_s;
      for (const ext::pool_id id : c.pools) {
        grow(std::size_t{id} + 1);
        if (cpu_wall_[id] == 0) measured.push_back(id);
        cpu_weighted_[id] += cpu_fraction * c.work_s;
        cpu_wall_[id] += c.work_s;
      }
    }
    for (const ext::pool_view& p : d.pools()) {
      credit_[p.id] = credit_now(p, workers, now, false);
      last_credit_[p.id] = credit_[p.id];
      const double cpu_fraction = cpu_wall_[p.id] > 0 ? cpu_weighted_[p.id] / cpu_wall_[p.id] : 1.0;
      received_[p.id] += p.work_s * cpu_fraction;
      received_total_ += p.work_s * cpu_fraction;
    }
    for (const ext::pool_id id : measured) cpu_weighted_[id] = cpu_wall_[id] = 0;
    last_tick_ = now;
  }

  // Systematic sampling with credit (fair.hpp, choices 1 and 2): one draw
  // per round places every worker; counts per pool, the runtime picks cores.
  // Only pools with work get cores, so between rounds the decision reads
  // those and no other pool.
  void decide_systematic(ext::decision& d, bool new_round, bool folded, time_point now) {
    const unsigned workers = d.core_count();
    if (new_round) {
      const auto pools = d.pools();
      std::vector<double> shares(pools.size());
      for (std::size_t i = 0; i < pools.size(); ++i) shares[i] = share_of(pools[i].id);
      std::vector<unsigned> primaries(pools.size(), 0);
      sample_primaries(shares, workers, uniform(rng_), primaries);
      std::fill(primaries_.begin(), primaries_.end(), 0u);
      primaries_sum_ = 0;
      for (std::size_t i = 0; i < pools.size(); ++i) {
        primaries_[pools[i].id] = primaries[i];
        primaries_sum_ += primaries[i];
        sampled_[pools[i].id] += primaries[i];
        sampled_total_ += primaries[i];
      }
    }
    const auto busy = d.pools_with_work();
    if (busy.empty()) {
      const auto pools = d.pools();
      if (!pools.empty()) d.allot(pools.front().id, workers);  // no work anywhere: the cores sleep
      d.donate_to(ext::no_pool);
      return;
    }
    std::vector<unsigned> primaries(busy.size());
    std::vector<double> credit(busy.size());
    unsigned busy_primaries = 0;
    for (std::size_t i = 0; i < busy.size(); ++i) {
      add(busy[i]);  // known already (its addition was an event); cheap if so
      primaries[i] = primaries_[busy[i].id];
      busy_primaries += primaries[i];
      credit[i] = credit_now(busy[i], workers, now, folded);
      last_credit_[busy[i].id] = credit[i];
    }
    std::vector<unsigned> allotment(busy.size());
    allot_fair_with_work(primaries, credit, primaries_sum_ > busy_primaries ? primaries_sum_ - busy_primaries : 0,
                         allotment);
    for (std::size_t i = 0; i < busy.size(); ++i)
      if (allotment[i] > 0) d.allot(busy[i].id, allotment[i]);  // pools not named get none
    // Between decisions a core whose pool runs out of work donates itself
    // to the most urgent pool with work, and comes back by itself.
    d.donate_to(busy.front().id);
  }

  // Independent sampling (the paper's rule, fair.hpp): each worker redraws
  // at its own round boundaries; every worker is placed explicitly, since
  // the draw is the worker's own.
  // Draws read every pool (`draws`: some worker is at a boundary, or its
  // primary is gone: draw_due); placing the workers reads only the pools
  // with work.
  void decide_independent(ext::decision& d, time_point now, bool restart, bool draws) {
    const unsigned workers = d.core_count();
    if (workers == 0) return;
    if (draws) {
      const auto pools = d.pools();
      if (pools.empty()) return;
      if (restart || core_primary_.size() != workers) start_rounds(workers, now);
      std::vector<double> shares(pools.size());
      for (std::size_t i = 0; i < pools.size(); ++i) shares[i] = share_of(pools[i].id);
      for (unsigned c = 0; c < workers; ++c) {
        const bool gone = d.find(core_primary_[c]) == nullptr;  // never drawn yet, or its pool was removed
        if (gone || now >= core_round_end_[c]) {
          if (!gone) core_round_end_[c] = next_boundary(core_round_end_[c], now);
          core_primary_[c] = pools[draw_primary(shares, uniform(rng_))].id;
          ++sampled_[core_primary_[c]];
          ++sampled_total_;
        }
      }
    }
    if (core_primary_.size() != workers) return;  // no pool yet: nothing drawn
    const auto sets = independent_sets(core_primary_, d.pools_with_work());
    for (unsigned c = 0; c < workers; ++c) d.serve(c, sets[c]);
  }

  // Some worker must draw now: the rounds restart (the worker count
  // changed), its round ended, or its primary's pool is gone.
  bool draw_due(const ext::decision& d, time_point now) const {
    if (core_primary_.size() != d.core_count()) return true;
    for (std::size_t c = 0; c < core_primary_.size(); ++c)
      if (now >= core_round_end_[c] || d.find(core_primary_[c]) == nullptr) return true;
    return false;
  }

  // Fresh rounds for every worker: each draws at once (the primaries are
  // cleared), worker c's first round ends after (c + 1) / P rounds.
  void start_rounds(unsigned workers, time_point now) {
    core_primary_.assign(workers, ext::no_pool);
    core_round_end_.resize(workers);
    for (unsigned c = 0; c < workers; ++c)
      core_round_end_[c] = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(round_ * (c + 1)) / workers;
  }

  // The first boundary after `now` on the grid of whole rounds from `end`
  // (a worker keeps its phase even after ticks paused).
  time_point next_boundary(time_point end, time_point now) const {
    const auto round = std::chrono::duration_cast<std::chrono::steady_clock::duration>(round_);
    return end + round * ((now - end) / round + 1);
  }

  static double uniform(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }

  std::chrono::microseconds round_;
  promptly::fair_sampling sampling_;
  double cap_s_, floor_s_;
  // By pool id:
  std::vector<bool> live_;
  std::vector<double> weight_, credit_, last_credit_, received_;
  std::vector<unsigned> primaries_;  // systematic: the round's primaries
  std::vector<std::uint64_t> sampled_;
  std::vector<double> cpu_weighted_, cpu_wall_;  // end_quantum's scratch, zero between ticks
  double total_weight_ = 0;    // of the live pools
  std::size_t live_count_ = 0;
  unsigned primaries_sum_ = 0;  // primaries_ summed over the live pools
  std::uint64_t sampled_total_ = 0;  // sampled_ summed
  double received_total_ = 0;        // received_ summed
  // By core (independent sampling):
  std::vector<ext::pool_id> core_primary_;
  std::vector<time_point> core_round_end_;
  std::mt19937_64 rng_;
  clock_fn now_;
  bool started_ = false;
  time_point last_tick_;
};

}  // namespace

std::unique_ptr<ext::policy> make_fair_policy_with(const ext::fair_params& p, std::uint64_t seed, clock_fn now) {
  if (p.sampling != promptly::fair_sampling::systematic && p.sampling != promptly::fair_sampling::independent)
    throw std::invalid_argument("promptly: fair sampling = " + std::to_string(static_cast<int>(p.sampling)) +
                                " is not a fair_sampling (systematic or independent)");
  if (!now) throw std::invalid_argument("promptly: the fair policy needs a clock");
  return std::make_unique<fair_policy>(p, seed, std::move(now));
}

std::unique_ptr<ext::policy> make_fair_policy(const ext::fair_params& p) {
  return make_fair_policy_with(p, std::random_device{}(), [] { return std::chrono::steady_clock::now(); });
}

}  // namespace promptly::policy_impl

namespace promptly::ext {

std::vector<double> fair_shares(std::span<const long long> weights, std::size_t pools) {
  if (pools == 0) throw std::invalid_argument("promptly: a fairness criterion needs at least one level");
  if (weights.empty()) return std::vector<double>(pools, 1.0 / static_cast<double>(pools));
  if (weights.size() > pools)
    throw std::invalid_argument("promptly: the fairness criterion gives a weight to level " +
                                std::to_string(weights.size() - 1) + " but the runtime has " + std::to_string(pools) +
                                " levels (0.." + std::to_string(pools - 1) + ")");
  long double sum = 0;
  for (std::size_t p = 0; p < weights.size(); ++p) {
    if (weights[p] < 0)
      throw std::invalid_argument("promptly: the fairness weight of level " + std::to_string(p) + " is " +
                                  std::to_string(weights[p]) + "; weights must be >= 0");
    sum += static_cast<long double>(weights[p]);
  }
  if (sum == 0)
    throw std::invalid_argument("promptly: every fairness weight is 0; at least one level needs a positive weight");
  std::vector<double> shares(pools, 0.0);
  for (std::size_t p = 0; p < weights.size(); ++p)
    shares[p] = static_cast<double>(static_cast<long double>(weights[p]) / sum);
  return shares;
}

}  // namespace promptly::ext
