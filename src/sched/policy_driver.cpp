// The policy driver: feeds the policy its events (quantum ticks, a level
// becoming non-empty or empty) with per-level stats, and applies the
// allotment it returns by setting workers' assigned levels (seed 000 Sec. 5:
// "the master alerts a worker to switch priority by setting a per-worker
// flag, checked at each strand boundary").
//
// Invariants
//  * policy_, allotment_, the seen_* counters, last_stats_ and the trace are
//    guarded by policy_mutex_; decisions are serialised.
//  * level_pool::believed_nonempty is what the policy last saw: every
//    decision sets it from the stats it decided on. A submitter pushes first
//    and then exchanges it to true; if it was false, the submitter sends
//    became_nonempty. A decision that clears it re-reads the level after the
//    clear (both seq-cst), so either the submitter sees false and sends the
//    event, or the decision sees the work and decides again: work never
//    waits in a level the policy believes empty.
//  * The quantum master sleeps on master_cv_ while fewer than two levels have
//    work: with one busy level the allotment is all workers there whatever
//    the desires say, so quanta would only cost context switches (an idle
//    runtime, and a single-level program, see no quantum wake-ups at all).
#include <algorithm>
#include <cmath>

#include "scheduler.hpp"

namespace promptly::detail {

void scheduler::note_nonempty(unsigned level) {
  if (roaming_.load(std::memory_order_relaxed)) return;
  if (levels_[level]->believed_nonempty.exchange(true, std::memory_order_seq_cst)) return;
  std::lock_guard lock(policy_mutex_);
  if (stopping_.load(std::memory_order_relaxed)) return;
  decide_locked(ext::pool_event::became_nonempty, level);
  master_cv_.notify_all();  // an idle master resumes its quanta
}

void scheduler::note_maybe_empty(unsigned level) {
  if (roaming_.load(std::memory_order_relaxed)) return;
  level_pool& p = *levels_[level];
  if (!p.believed_nonempty.load(std::memory_order_seq_cst) || p.has_ready_work()) return;
  std::lock_guard lock(policy_mutex_);
  if (!p.believed_nonempty.load(std::memory_order_seq_cst) || p.has_ready_work()) return;
  if (stopping_.load(std::memory_order_relaxed)) return;
  decide_locked(ext::pool_event::became_empty, level);  // sets believed_nonempty from what it saw
}

namespace {
// The phase interval a worker is in now, not yet added to its accounts: it
// counts for the level the worker serves.
struct open_interval {
  unsigned level;
  bool working;
  std::uint64_t ns;
};
open_interval open_interval_of(const worker& w, std::uint64_t now) noexcept {
  const std::uint64_t since = w.phase_since_ns.load(std::memory_order_relaxed);
  return {w.serving.load(std::memory_order_relaxed), w.phase.load(std::memory_order_relaxed) == worker_phase::working,
          now > since ? now - since : 0};
}
}  // namespace

std::vector<ext::pool_stats> scheduler::collect_stats_locked(bool advance) {
  const std::size_t levels = levels_.size();
  std::vector<std::uint64_t> work(levels, 0), look(levels, 0);
  const std::uint64_t now = now_ns();
  for (auto& w : workers_) {
    for (std::size_t l = 0; l < levels; ++l) {
      work[l] += w->accounts[l].work_ns.load(std::memory_order_relaxed);
      look[l] += w->accounts[l].look_ns.load(std::memory_order_relaxed);
    }
    const open_interval open = open_interval_of(*w, now);
    (open.working ? work[open.level] : look[open.level]) += open.ns;
  }
  if (seen_work_ns_.size() != levels) {
    seen_work_ns_.assign(levels, 0);
    seen_look_ns_.assign(levels, 0);
  }
  std::vector<ext::pool_stats> stats(levels);
  for (std::size_t l = 0; l < levels; ++l) {
    const std::uint64_t dw = work[l] >= seen_work_ns_[l] ? work[l] - seen_work_ns_[l] : 0;
    const std::uint64_t dl = look[l] >= seen_look_ns_[l] ? look[l] - seen_look_ns_[l] : 0;
    stats[l].work_s = static_cast<double>(dw) * 1e-9;
    stats[l].look_s = static_cast<double>(dl) * 1e-9;
    stats[l].has_ready_work = levels_[l]->has_ready_work();
    stats[l].allotted = allotment_[l];
    if (advance) {
      seen_work_ns_[l] = work[l];
      seen_look_ns_[l] = look[l];
    }
  }
  return stats;
}

void scheduler::decide_locked(ext::pool_event ev, std::size_t level) {
  if (roaming_.load(std::memory_order_relaxed)) return;
  for (bool again = true; again;) {
    std::vector<ext::pool_stats> stats = collect_stats_locked(ev == ext::pool_event::quantum);
    policy_->decide(ev, level, stats, worker_count(), allotment_);
    if (ev == ext::pool_event::quantum) last_stats_ = stats;
    ++decisions_;
    apply_allotment_locked();
    trace_locked();
    again = false;
    for (std::size_t l = 0; l < levels_.size(); ++l) {
      level_pool& p = *levels_[l];
      p.believed_nonempty.store(stats[l].has_ready_work, std::memory_order_seq_cst);
      if (!stats[l].has_ready_work && p.has_ready_work()) {  // work arrived while we decided
        p.believed_nonempty.store(true, std::memory_order_seq_cst);
        ev = ext::pool_event::became_nonempty;
        level = l;
        again = true;
        break;
      }
    }
  }
}

// Maps per-level counts to workers, keeping every worker at its current
// assignment while that level still has room, then filling the rest from
// the most urgent level down. Workers left over get no level (they sleep).
void scheduler::apply_allotment_locked() {
  const std::size_t levels = levels_.size();
  std::vector<unsigned> room(allotment_.begin(), allotment_.end());
  std::vector<unsigned> next(workers_.size(), no_level);
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    const unsigned a = workers_[i]->assigned.load(std::memory_order_relaxed);
    if (a != no_level && a < levels && room[a] > 0) {
      next[i] = a;
      --room[a];
    }
  }
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (next[i] != no_level) continue;
    const unsigned serving = workers_[i]->serving.load(std::memory_order_relaxed);
    if (serving < levels && room[serving] > 0) {
      next[i] = serving;
      --room[serving];
      continue;
    }
    for (std::size_t l = 0; l < levels; ++l)
      if (room[l] > 0) {
        next[i] = static_cast<unsigned>(l);
        --room[l];
        break;
      }
  }
  notifier::fence_before_notify();
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    worker& w = *workers_[i];
    if (w.assigned.load(std::memory_order_relaxed) == next[i]) continue;
    // Seq-cst: a worker about to sleep re-reads its assignment after
    // preparing to wait, and notify() below then finds it waiting.
    w.assigned.store(next[i], std::memory_order_seq_cst);
    notifier::notify(w.slot);
  }
}

void scheduler::trace_locked() {
  if (!trace_.is_open()) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const double util = l < last_stats_.size() ? last_stats_[l].utilization() : 0.0;
    trace_ << t << ',' << policy_->name() << ',' << l << ',' << policy_->desire(l) << ',' << allotment_[l] << ','
           << util << ',' << (levels_[l]->has_ready_work() ? 1 : 0) << '\n';
  }
}

void scheduler::master_main() {
  std::unique_lock lock(policy_mutex_);
  auto deadline = std::chrono::steady_clock::now();
  while (!stopping_.load(std::memory_order_relaxed)) {
    const auto q = policy_->quantum();
    unsigned busy_levels = 0;
    for (auto& l : levels_) busy_levels += l->believed_nonempty.load(std::memory_order_relaxed) ? 1 : 0;
    if (q.count() == 0 || roaming_.load(std::memory_order_relaxed) || busy_levels < 2) {
      master_cv_.wait(lock);  // woken by a non-empty event, a policy change or shutdown
      deadline = std::chrono::steady_clock::now() + q;
      continue;
    }
    deadline += q;
    const auto now = std::chrono::steady_clock::now();
    if (deadline < now) deadline = now + q;  // fell behind (the VM paused us): do not burst
    master_cv_.wait_until(lock, deadline);
    if (stopping_.load(std::memory_order_relaxed) || std::chrono::steady_clock::now() < deadline) continue;
    decide_locked(ext::pool_event::quantum, levels_.size());
  }
}

void scheduler::set_policy(const std::string& name) {
  std::unique_ptr<ext::policy> p = ext::make_policy(name, levels_.size(), cfg_.aps, cfg_.fair);
  std::lock_guard lock(policy_mutex_);
  cfg_.policy = name;
  install_policy_locked(std::move(p));
}

void scheduler::set_fairness(std::vector<long long> weights) {
  (void)ext::fair_shares(weights, levels_.size());  // throws before anything changes
  std::lock_guard lock(policy_mutex_);
  cfg_.fair.weights = std::move(weights);  // the round stays as configured
  if (cfg_.policy == "fair") install_policy_locked(ext::make_policy("fair", levels_.size(), cfg_.aps, cfg_.fair));
}

void scheduler::install_policy_locked(std::unique_ptr<ext::policy> p) {
  policy_ = std::move(p);
  const bool roaming = policy_->roaming();
  roaming_.store(roaming, std::memory_order_seq_cst);
  if (allotment_.size() != levels_.size()) allotment_.assign(levels_.size(), 0);
  if (last_stats_.size() != levels_.size()) last_stats_.assign(levels_.size(), {});
  if (roaming) {
    notifier::fence_before_notify();
    for (auto& w : workers_) {
      w->assigned.store(w->serving.load(std::memory_order_relaxed), std::memory_order_seq_cst);
      notifier::notify(w->slot);
    }
  } else {
    decide_locked(ext::pool_event::quantum, levels_.size());
  }
  if (policy_->quantum().count() > 0 && !master_.joinable()) master_ = std::thread([this] { master_main(); });
  master_cv_.notify_all();
}

std::string scheduler::policy_name() const {
  std::lock_guard lock(policy_mutex_);
  return std::string(policy_->name());
}

runtime_stats scheduler::stats() const {
  std::lock_guard lock(policy_mutex_);
  runtime_stats s;
  s.policy = std::string(policy_->name());
  s.workers = worker_count();
  s.decisions = decisions_;
  s.levels.resize(levels_.size());
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    level_stats& ls = s.levels[l];
    ls.desire = policy_->desire(l);
    const ext::fair_account fa = policy_->fairness(l);
    ls.share = fa.share;
    ls.sampled_share = fa.sampled_share;
    ls.received_share = fa.received_share;
    ls.credit_s = fa.credit_s;
    ls.allotted = roaming_.load(std::memory_order_relaxed) ? 0 : allotment_[l];
    ls.has_ready_work = levels_[l]->has_ready_work();
    if (l < last_stats_.size()) {
      ls.utilization = last_stats_[l].utilization();
      ls.last_work_s = last_stats_[l].work_s;
      ls.last_look_s = last_stats_[l].look_s;
    }
    const std::uint64_t now = now_ns();
    for (auto& w : workers_) {
      ls.work_s += static_cast<double>(w->accounts[l].work_ns.load(std::memory_order_relaxed)) * 1e-9;
      ls.look_s += static_cast<double>(w->accounts[l].look_ns.load(std::memory_order_relaxed)) * 1e-9;
      if (const open_interval open = open_interval_of(*w, now); open.level == l)
        (open.working ? ls.work_s : ls.look_s) += static_cast<double>(open.ns) * 1e-9;
      ls.tasks_run += w->accounts[l].tasks.load(std::memory_order_relaxed);
      ls.switches_in += w->accounts[l].switches_in.load(std::memory_order_relaxed);
    }
  }
  return s;
}

}  // namespace promptly::detail
