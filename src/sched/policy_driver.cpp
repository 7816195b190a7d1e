// The policy driver: one thread that feeds the policy its events (quantum
// ticks, a level becoming non-empty or empty) with per-level stats, and
// applies the allotment it returns by setting workers' assigned levels
// (seed 000 Sec. 5: "the master alerts a worker to switch priority by
// setting a per-worker flag, checked at each strand boundary").
//
// Invariants
//  * Only the driver thread, and the API calls that install a policy,
//    call into the policy; they hold policy_mutex_, which guards policy_,
//    allotment_, the seen_* counters, last_stats_, the quantum state and the
//    trace. The mechanism (submitters, wakers, workers) only posts events:
//    an atomic bit per level and a futex wake of the driver (post_event),
//    which never blocks, allocates or throws, so it is safe on the noexcept
//    wake path of a parked fiber.
//  * level_pool::believed_nonempty is what the policy last saw: every
//    decision sets it from the stats it decided on. A submitter pushes first
//    and then exchanges it to true; if it was false, the submitter posts
//    became_nonempty. A decision that clears it re-reads the level after the
//    clear (both seq-cst), so either the submitter sees false and posts the
//    event, or the decision sees the work and decides again: work never
//    waits in a level the policy believes empty. A worker that becomes
//    active re-reads the belief after its increment (scheduling_loop.cpp).
//  * The driver decides on the quantum deadline whatever else wakes it
//    (events never push the deadline out). Quanta run while at least two
//    levels had work during the last quantum (believed non-empty now, or
//    reported non-empty since the last tick); otherwise the driver sleeps
//    until an event: with one busy level the allotment is all workers there
//    whatever the desires say, so quanta would only cost wake-ups.
#include <algorithm>
#include <cassert>
#include <bit>
#include <cmath>
#include <cstdio>
#include <exception>
#include <thread>

#include "chaos.hpp"
#include "scheduler.hpp"

namespace promptly::detail {

// Seq-cst mode loads: a submitter that pushed after an install's decision
// read the level must see the install's store of roaming_ (both seq-cst).
void scheduler::note_nonempty(unsigned level, bool decide_here) noexcept {
  if (roaming_.load(std::memory_order_seq_cst)) return;
  if (levels_[level]->believed_nonempty.exchange(true, std::memory_order_seq_cst)) return;
  if (decide_here && decide_now(level)) return;
  post_event(pending_nonempty_, level);
}

void scheduler::note_maybe_empty(unsigned level) noexcept {
  if (roaming_.load(std::memory_order_seq_cst)) return;
  level_pool& p = *levels_[level];
  if (!p.believed_nonempty.load(std::memory_order_seq_cst) || p.has_ready_work()) return;
  post_event(pending_maybe_empty_, level);
}

void scheduler::post_event(std::atomic<std::uint64_t>& pending, unsigned level) noexcept {
  // Seq-cst, then the notifier's fence: the driver's prepare_wait/re-check
  // either sees the bit or is woken (notifier.hpp, no lost wake-up).
  pending.fetch_or(std::uint64_t{1} << level, std::memory_order_seq_cst);
  notifier::fence_before_notify();
  notifier::notify(driver_slot_);
}

void scheduler::poke_driver() noexcept {
  driver_poked_.store(true, std::memory_order_seq_cst);  // seq-cst: as post_event
  notifier::fence_before_notify();
  notifier::notify(driver_slot_);
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
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
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
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
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
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
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
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (!trace_.is_open()) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const double util = l < last_stats_.size() ? last_stats_[l].utilization() : 0.0;
    trace_ << t << ',' << policy_->name() << ',' << l << ',' << policy_->desire(l) << ',' << allotment_[l] << ','
           << util << ',' << (levels_[l]->has_ready_work() ? 1 : 0) << '\n';
  }
}

void scheduler::handle_events_locked() {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  // Seq-cst: pairs with post_event's fetch_or (a bit set after this
  // exchange wakes the driver again).
  std::uint64_t nonempty = pending_nonempty_.exchange(0, std::memory_order_seq_cst);
  std::uint64_t maybe_empty = pending_maybe_empty_.exchange(0, std::memory_order_seq_cst);
  if (roaming_.load(std::memory_order_relaxed)) return;
  try {
    for (; nonempty != 0; nonempty &= nonempty - 1) {
      const auto l = static_cast<std::size_t>(std::countr_zero(nonempty));
      nonempty_since_tick_ |= std::uint64_t{1} << l;
      decide_locked(ext::pool_event::became_nonempty, l);
    }
    for (; maybe_empty != 0; maybe_empty &= maybe_empty - 1) {
      const auto l = static_cast<std::size_t>(std::countr_zero(maybe_empty));
      level_pool& p = *levels_[l];
      if (p.believed_nonempty.load(std::memory_order_seq_cst) && !p.has_ready_work())
        decide_locked(ext::pool_event::became_empty, l);
    }
  } catch (...) {
    // Put back what was not decided (relaxed: the driver, which retries,
    // takes them under this mutex), then report to the caller.
    pending_nonempty_.fetch_or(nonempty, std::memory_order_relaxed);
    pending_maybe_empty_.fetch_or(maybe_empty, std::memory_order_relaxed);
    throw;
  }
}

// A thread that made a level non-empty and may run a policy (a submitter,
// a task spawning at another level; never the noexcept wake path) decides
// at once when no decision is under way, so that urgent work waits neither
// for the driver thread to be scheduled nor for a wake-up of it that would
// preempt a worker (src/sched/README.md, "Decisions in one place", cites
// the measurements). Returns false when it could not decide (the lock is busy,
// or the policy threw and handle_events_locked put the events back): the
// caller then posts the event to the driver.
bool scheduler::decide_now(unsigned level) noexcept {
  std::unique_lock lock(policy_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || stopping_.load(std::memory_order_relaxed)) return false;
  // Relaxed: we hold the lock that every reader of the bits holds.
  pending_nonempty_.fetch_or(std::uint64_t{1} << level, std::memory_order_relaxed);
  try {
    handle_events_locked();
  } catch (...) {
    return false;
  }
  // Only the driver arms the quantum timer: wake it when quanta may have to
  // start (the policy has a quantum and none is armed), or a level that just
  // became the second busy one would never get its quanta.
  if (!next_quantum_ && policy_->quantum().count() > 0 && !roaming_.load(std::memory_order_relaxed)) poke_driver();
  return true;
}

// Ticks when the deadline has passed, and (re)arms or disarms the quantum.
void scheduler::advance_quantum_locked(std::chrono::steady_clock::time_point now) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  const auto q = policy_->quantum();
  if (q.count() == 0 || roaming_.load(std::memory_order_relaxed)) {
    next_quantum_.reset();
    return;
  }
  auto busy_levels = [&] {
    std::uint64_t busy = nonempty_since_tick_;
    for (std::size_t l = 0; l < levels_.size(); ++l)
      if (levels_[l]->believed_nonempty.load(std::memory_order_relaxed)) busy |= std::uint64_t{1} << l;
    return std::popcount(busy);
  };
  if (!next_quantum_) {
    if (busy_levels() >= 2) next_quantum_ = now + q;
    return;
  }
  if (now < *next_quantum_) return;
  decide_locked(ext::pool_event::quantum, levels_.size());
  ++quanta_;
  const bool keep_going = busy_levels() >= 2;
  nonempty_since_tick_ = 0;
  if (!keep_going) {
    next_quantum_.reset();
    return;
  }
  *next_quantum_ += q;
  if (*next_quantum_ < now) *next_quantum_ = now + q;  // fell behind (the VM paused us): do not burst
}

void scheduler::driver_main() {
  using clock = std::chrono::steady_clock;
  bool failed_before = false;
  for (;;) {
    std::optional<clock::time_point> wake_at;
    {
      std::lock_guard lock(policy_mutex_);
      if (stopping_.load(std::memory_order_relaxed)) return;
      driver_poked_.store(false, std::memory_order_seq_cst);
      try {
        chaos::point();
        handle_events_locked();
        advance_quantum_locked(clock::now());
        failed_before = false;
      } catch (const std::exception& e) {  // handle_events_locked put the undecided events back
        // A policy that throws (out of memory) must not stop the driver:
        // report once, and retry the same events shortly.
        if (!failed_before) std::fprintf(stderr, "promptly: policy decision failed: %s; retrying\n", e.what());
        failed_before = true;
        wake_at = clock::now() + std::chrono::milliseconds(1);
      }
      if (!wake_at) wake_at = next_quantum_;
    }
    notifier::prepare_wait(driver_slot_);
    if (stopping_.load(std::memory_order_seq_cst) || pending_nonempty_.load(std::memory_order_seq_cst) != 0 ||
        pending_maybe_empty_.load(std::memory_order_seq_cst) != 0 || driver_poked_.load(std::memory_order_seq_cst)) {
      notifier::cancel_wait(driver_slot_);
      continue;
    }
    if (!wake_at) {
      notifier::commit_wait(driver_slot_);
      continue;
    }
    const auto left = *wake_at - clock::now();
    if (left <= clock::duration::zero()) {
      notifier::cancel_wait(driver_slot_);
      continue;
    }
    notifier::commit_wait(driver_slot_, std::chrono::duration_cast<std::chrono::nanoseconds>(left) +
                                            std::chrono::nanoseconds(1));
  }
}

void scheduler::set_policy(const std::string& name) {
  std::unique_ptr<ext::policy> p = ext::make_policy(name, levels_.size(), cfg_.aps, cfg_.fair);
  std::lock_guard lock(policy_mutex_);
  cfg_.policy = name;
  install_policy_locked(std::move(p));
}

void scheduler::set_policy(std::unique_ptr<ext::policy> p) {
  if (p == nullptr) throw std::invalid_argument("promptly: set_policy given a null policy");
  std::lock_guard lock(policy_mutex_);
  cfg_.policy = std::string(p->name());
  install_policy_locked(std::move(p));
}

void scheduler::set_fairness(std::vector<long long> weights) {
  (void)ext::fair_shares(weights, levels_.size());  // throws before anything changes
  std::lock_guard lock(policy_mutex_);
  cfg_.fair.weights = std::move(weights);  // the round stays as configured
  if (cfg_.policy == "fair") install_policy_locked(ext::make_policy("fair", levels_.size(), cfg_.aps, cfg_.fair));
}

void scheduler::install_policy_locked(std::unique_ptr<ext::policy> p) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  policy_ = std::move(p);
  const bool roaming = policy_->roaming();
  roaming_.store(roaming, std::memory_order_seq_cst);
  if (allotment_.size() != levels_.size()) allotment_.assign(levels_.size(), 0);
  if (last_stats_.size() != levels_.size()) last_stats_.assign(levels_.size(), {});
  if (roaming) {
    for (auto& w : workers_) w->assigned.store(w->serving.load(std::memory_order_relaxed), std::memory_order_seq_cst);
  } else {
    decide_locked(ext::pool_event::quantum, levels_.size());
  }
  // Every worker re-reads the mode: a waiting worker took a snapshot of it
  // (scheduling_loop.cpp) and leaves its wait when the mode differs.
  notifier::fence_before_notify();
  for (auto& w : workers_) notifier::notify(w->slot);
  next_quantum_.reset();
  nonempty_since_tick_ = 0;
  poke_driver();
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
  s.quanta = quanta_;
  s.blocked_waits = blocked_waits_.load(std::memory_order_relaxed);
  for (auto& w : workers_) {
    worker_state ws;
    ws.serving = w->serving.load(std::memory_order_relaxed);
    const unsigned a = w->assigned.load(std::memory_order_relaxed);
    ws.assigned = a == no_level ? -1 : static_cast<int>(a);
    const bool asleep = w->slot.state.load(std::memory_order_relaxed) == sleep_slot::sleeping;
    ws.state = asleep ? "sleeping" : w->phase.load(std::memory_order_relaxed) == worker_phase::working ? "working" : "looking";
    s.sleeping_workers += asleep ? 1 : 0;
    s.worker_states.push_back(std::move(ws));
  }
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
