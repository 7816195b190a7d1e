// The simulator's engine (engine.hpp states what is modelled and the
// invariants). One event queue in simulated microseconds; a worker's next
// action is one event, tagged with the worker's epoch so that an action
// overtaken by a wake-up or a new assignment is dropped.
#include "engine.hpp"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <queue>
#include <random>
#include <stdexcept>

#include "policy/fair.hpp"
#include "policy/serpt.hpp"
#include "promptly/ext/policy.hpp"
#include "sched/decision.hpp"
#include "sched/pool.hpp"
#include "sched/set_walk.hpp"

namespace promptly::sim {
namespace {

using detail::pool_set;
constexpr std::uint32_t none = detail::no_pool;
constexpr std::uint32_t every_domain = none - 1;  // the sleep domain of the cores serving every pool

struct ref {
  std::uint32_t req;
  std::uint32_t node;
};

// asleep: no pool (the policy's choice); sleeping and napping: the sleep
// protocol; looking: a thief with its next probe (or its give-up) pending;
// spinning: a thief with nothing to probe, waiting for work to appear.
enum class mode : std::uint8_t { asleep, sleeping, napping, looking, spinning, running };

bool sleeps(mode m) { return m == mode::asleep || m == mode::sleeping || m == mode::napping; }

enum class act : std::uint8_t { finish, loop_top, resume_wait, hit, give_up, release, decide, tick };

struct event {
  double t;
  std::uint64_t seq;
  act what;
  std::uint32_t who;    // worker or request
  std::uint32_t epoch;  // the worker's epoch when scheduled
  bool operator>(const event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct worker {
  unsigned index = 0;
  mode m = mode::asleep;
  std::uint32_t pool = none;  // the pool it serves
  pool_set set;               // the set it accepted
  pool_set assigned;          // the set the last decision published
  std::uint64_t assigned_version = 0, accepted_version = 0;
  bool decide_request = false;
  bool donated = false;
  unsigned boundaries_since_walk = 0;
  std::deque<ref> dq;         // its deque at `pool` (bottom = back)
  ref current{};
  std::uint32_t epoch = 0;
  unsigned failures = 0;      // probes failed in this exploration
  double spin_start = 0;
  bool thief = false;
  std::vector<std::uint32_t> thief_of;
  std::vector<std::uint32_t> napped_for;  // domains it naps for as their last thief
  bool active = false;
  bool counted_every = false;
  std::uint32_t active_in = none;
  double awake_since = 0;
  double acc_mark = 0;        // accounted up to here
  double work_acc = 0, look_acc = 0;
};

struct pool_rec {
  bool live = false;
  unsigned rank = 0;
  std::uint64_t creation_seq = 0;
  double created = 0;
  std::deque<ref> injection;
  std::vector<std::deque<ref>> muggable;
  std::size_t muggable_items = 0;
  std::size_t deque_items = 0;  // in the deques of workers serving it
  unsigned victims = 0;         // workers serving it whose deque is non-empty
  unsigned running = 0;
  int actives = 0, thieves = 0;
  bool believed = false;
  bool busy_since_tick = false;
  bool tell_nonempty = false, tell_empty = false;
  bool tell_backlog = false;    // a backlog event is pending (the policy asked for them)
  bool backlog_posted = false;  // ... or was posted since the last decision's view (the runtime's rate limit)
  double weight = 1;  // the fairness weight (levels: the criterion's; pools per request: 1)
  double work_acc = 0, look_acc = 0;
  // pool_view::stalled, as the runtime computes it (policy_driver.cpp): nodes started, and the
  // count and queued() at the last tick.
  std::uint64_t started = 0, started_at_tick = 0;
  bool queued_at_tick = false;
  std::vector<std::pair<unsigned, std::uint32_t>> spinners;
  bool queued() const { return !injection.empty() || muggable_items > 0; }
  bool stealable() const { return queued() || deque_items > 0; }
  bool ready() const { return stealable() || running > 0; }
};

struct request_state {
  std::uint32_t pool = none;
  std::vector<std::uint32_t> preds_left;
  std::size_t done = 0;
  double start = -1;
};

class engine {
 public:
  engine(const workload& w, const config& c) : w_(w), c_(c), rng_(c.seed), wake_rng_(c.seed ^ 0x9e3779b97f4a7c15ULL) {
    if (c.workers == 0) throw std::invalid_argument("promptly-sim: workers must be at least 1");
    if (c.workers > 65536) throw std::invalid_argument("promptly-sim: at most 65536 workers");
    for (double x : c.cost.wake_samples_us)
      if (!(x >= 0 && std::isfinite(x)))
        throw std::invalid_argument("promptly-sim: a wake cost sample must be a finite number >= 0, got " + std::to_string(x));
    validate(w);
    steal_bound_ = c.steal_bound != 0 ? c.steal_bound : 2 * (c.workers + 1);
    if (c.policy == "fair") {
      policy_ = policy_impl::make_fair_policy_with(c.fair, c.seed, [this] {
        return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(static_cast<long long>(now_ * 1e3)));
      });
    } else if (c.policy == "serpt") {
      sizes_ = std::make_shared<policy_impl::size_board>();
      policy_impl::serpt_params sp;
      sp.speedup_exponent = c.serpt_speedup_exponent;
      sp.slowdown_cap = c.serpt_slowdown_cap;
      sp.due_core_share = c.serpt_due_core_share;
      sp.work_per_core = std::chrono::microseconds(static_cast<long long>(c.serpt_work_per_core_us));
      sp.start_wait_bound = std::chrono::microseconds(static_cast<long long>(c.serpt_start_wait_us));
      sp.quantum = std::chrono::microseconds(static_cast<long long>(c.serpt_quantum_us));
      policy_ = policy_impl::make_serpt_policy(sp, sizes_);
    } else {
      policy_ = ext::make_policy(c.policy, c.aps, c.fair);
    }
    steal_boundary_ = policy_->switches_only_when_out_of_work();
    busy_pools_for_quanta_ = policy_->ticks_while_one_pool_is_busy() ? 1 : 2;
    backlog_events_ = policy_->wants_backlog_events();
    workers_.resize(c.workers);
    for (unsigned i = 0; i < c.workers; ++i) workers_[i].index = i;
    if (!c.pool_per_request) {
      (void)ext::fair_shares(c.fair.weights, w.pools);  // a bad criterion is an error naming it, as in the runtime
      for (std::uint32_t p = 0; p < w.pools; ++p) pools_[make_pool(p)].weight = detail::level_weight(c.fair.weights, p);
    }
    reqs_.resize(w.requests.size());
    for (std::size_t r = 0; r < w.requests.size(); ++r) {
      const request& q = w.requests[r];
      request_state& s = reqs_[r];
      s.preds_left.assign(q.nodes.size(), 0);
      for (const node& n : q.nodes)
        for (const std::uint32_t x : n.succ) ++s.preds_left[x];
      schedule(q.release_us, act::release, static_cast<std::uint32_t>(r), 0);
    }
    out_.workers = c.workers;
    out_.policy = std::string(policy_->name());
    out_.requests.resize(w.requests.size());
  }

  result run() {
    decide_batch({{ext::event_kind::installed, ext::no_pool, {}}}, true);
    arm_ticks();
    std::size_t unfinished = w_.requests.size();
    first_release_ = w_.requests.empty() ? 0 : w_.requests.front().release_us;
    for (const request& q : w_.requests) first_release_ = std::min(first_release_, q.release_us);
    while (finished_ < unfinished) {
      if (q_.empty()) {
        out_.completed = false;
        out_.problem = "no event is left with " + std::to_string(unfinished - finished_) +
                       " request(s) unfinished: work was lost or nobody was woken for it";
        break;
      }
      const event e = q_.top();
      q_.pop();
      if (e.t > c_.time_limit_us) {
        out_.completed = false;
        out_.problem = "the time limit of " + std::to_string(c_.time_limit_us) + " us was reached";
        break;
      }
      if (c_.check_lemma1 && e.t > now_ && undersubscribed()) out_.undersubscribed_us += e.t - now_;
      now_ = e.t;
      ++out_.events;
      dispatch(e);
    }
    const double end = out_.completed ? last_finish_ : now_;
    out_.makespan_us = std::max(0.0, end - first_release_);
    for (worker& v : workers_)
      if (!sleeps(v.m)) out_.awake_us += std::max(0.0, end - v.awake_since);
    if (violations_ > 0) {
      out_.completed = false;
      out_.problem += (out_.problem.empty() ? "" : "; ") + std::to_string(violations_) + " node(s) ran at a pool their worker did not serve";
    }
    return std::move(out_);
  }

 private:
  // ---- events -------------------------------------------------------------
  void schedule(double t, act what, std::uint32_t who, std::uint32_t epoch) {
    q_.push(event{t, seq_++, what, who, epoch});
  }
  void schedule_worker(worker& v, double delay, act what) { schedule(now_ + delay, what, v.index, v.epoch); }

  void dispatch(const event& e) {
    switch (e.what) {
      case act::release: return release(e.who);
      case act::decide: return decide_pending();
      case act::tick: return tick();
      default: break;
    }
    worker& v = workers_[e.who];
    if (e.epoch != v.epoch) return;  // overtaken
    switch (e.what) {
      case act::finish: return finish_node(v);
      case act::loop_top: return loop_top(v, 0);
      case act::resume_wait: return resume_wait(v);
      case act::hit: return probe_hit(v);
      case act::give_up: return give_up(v);
      default: return;
    }
  }

  // ---- accounting ----------------------------------------------------------
  void flush(worker& v) {
    const double dt = now_ - v.acc_mark;
    v.acc_mark = now_;
    if (dt <= 0) return;
    if (v.m == mode::running) {
      v.work_acc += dt;
      if (v.pool != none) pools_[v.pool].work_acc += dt;
    } else if (v.pool != none) {
      // Not working while serving a pool is looking, asleep in its sleep
      // protocol included: the runtime's phase is working or not
      // (open_interval_of), and APS's utilisation must see idle cores.
      v.look_acc += dt;
      pools_[v.pool].look_acc += dt;
    }
  }
  void set_mode(worker& v, mode m) {
    flush(v);
    if (sleeps(v.m) && !sleeps(m)) v.awake_since = now_;
    if (!sleeps(v.m) && sleeps(m)) out_.awake_us += now_ - v.awake_since;
    v.m = m;
  }

  // ---- pools -----------------------------------------------------------------
  std::uint32_t make_pool(unsigned rank) {
    const auto id = static_cast<std::uint32_t>(pools_.size());
    pools_.emplace_back();
    pool_rec& p = pools_.back();
    p.live = true;
    p.rank = rank;
    p.created = now_;
    p.creation_seq = creation_seq_++;
    return id;
  }
  // After anything that may flip a pool's readiness: record the event the
  // runtime would (became_nonempty / became_empty against the belief).
  void note(std::uint32_t id) {
    if (id == none) return;
    pool_rec& p = pools_[id];
    const bool r = p.ready();
    if (r) p.busy_since_tick = true;
    if (r && !p.believed && !p.tell_nonempty) {
      p.tell_nonempty = true;
      request_decision();
    } else if (!r && p.believed && !p.tell_empty && p.live) {
      p.tell_empty = true;
      request_decision();
    }
  }
  void alert_spinners(std::uint32_t id) {
    auto wake_list = [&](std::vector<std::pair<unsigned, std::uint32_t>>& list) {
      for (const auto& [i, ep] : list) {
        worker& v = workers_[i];
        if (v.epoch != ep || v.m != mode::spinning) continue;
        v.failures += attempts_in(v.failures, now_ - v.spin_start);
        ++v.epoch;
        set_mode(v, mode::looking);
        probe(v, 0);
      }
      list.clear();
    };
    wake_list(pools_[id].spinners);
    wake_list(every_spinners_);
  }
  void push_bottom(worker& v, ref r) {
    pool_rec& p = pools_[v.pool];
    if (v.dq.empty()) ++p.victims;
    v.dq.push_back(r);
    ++p.deque_items;
    if (v.dq.size() == 1) alert_spinners(v.pool);
  }
  // The owner pops the bottom (the newest); a thief takes the top (the oldest).
  ref take(worker& v, bool bottom) {
    pool_rec& p = pools_[v.pool];
    const ref r = bottom ? v.dq.back() : v.dq.front();
    if (bottom) v.dq.pop_back();
    else v.dq.pop_front();
    --p.deque_items;
    if (v.dq.empty()) --p.victims;
    return r;
  }
  ref pop_bottom(worker& v) { return take(v, true); }
  ref steal_top(worker& victim) { return take(victim, false); }
  void leave(worker& v) {
    if (v.pool == none) return;
    pool_rec& p = pools_[v.pool];
    if (!v.dq.empty()) {
      p.deque_items -= v.dq.size();
      --p.victims;
      p.muggable_items += v.dq.size();
      p.muggable.push_back(std::move(v.dq));
      v.dq.clear();
    }
    const std::uint32_t old = v.pool;
    v.pool = none;
    note(old);
  }
  void arrive(worker& v, std::uint32_t id) {
    v.pool = id;
    ++out_.moves;
  }
  void move_to(worker& v, std::uint32_t id, double& delay) {
    if (v.pool == id) return;
    leave(v);
    arrive(v, id);
    delay += c_.cost.move_us;
  }

  // ---- sets: the runtime's walks (sched/set_walk.hpp) over the simulated pools ----
  bool ready(std::uint32_t id) const { return id < pools_.size() && pools_[id].live && pools_[id].ready(); }
  auto ready_in_pool() const {
    return [this](std::uint32_t id) { return ready(id); };
  }
  std::vector<std::uint32_t> takeable(const worker& v) const {
    std::vector<std::uint32_t> out;
    if (v.set.every()) {
      for (std::uint32_t id = 0; id < pools_.size(); ++id)
        if (pools_[id].live) out.push_back(id);
    } else {
      const std::uint8_t n = detail::set_walk::pools_to_take_from(v.set, ready_in_pool());
      out.assign(v.set.ids.begin(), v.set.ids.begin() + n);
    }
    return out;
  }
  bool ready_work_ranked_above(const pool_set& s, std::uint32_t pool) const {
    return detail::set_walk::ready_work_ranked_above(s, pool, ready_in_pool());
  }
  // A simulated worker can serve every pool before it serves any, or after
  // its pool was removed (a runtime worker always holds a pool record, they
  // are type-stable): it starts at the first live pool.
  std::uint32_t pool_to_serve(const worker& v) const {
    if (v.set.every() && (v.pool == none || !pools_[v.pool].live)) {
      for (std::uint32_t id = 0; id < pools_.size(); ++id)
        if (pools_[id].live) return id;
      return none;
    }
    return detail::set_walk::pool_to_serve(v.set, v.pool, ready_in_pool());
  }

  // ---- the Taskflow counters ------------------------------------------------
  std::pair<int*, int*> domain(std::uint32_t d) {  // actives, thieves
    if (d == every_domain) return {&every_actives_, &every_thieves_};
    return {&pools_[d].actives, &pools_[d].thieves};
  }
  void become_thief(worker& v) {
    if (v.thief) return;
    v.thief = true;
    v.thief_of.clear();
    if (v.set.every()) v.thief_of.push_back(every_domain);
    else v.thief_of.assign(v.set.ids.begin(), v.set.ids.begin() + v.set.count);
    for (const std::uint32_t d : v.thief_of) ++*domain(d).second;
  }
  // Leaves the thieves (Algorithm 5). Lemma 1 per domain: the last thief of
  // a domain with active workers hands the role on when it found work (the
  // paper) and when it leaves to serve another pool (a move); when it gives
  // up instead, it naps (the caller): returns true then.
  enum class leaving : std::uint8_t { found, moving, giving_up };
  bool leave_thieves(worker& v, leaving why) {
    if (!v.thief) return false;
    v.thief = false;
    bool last_of_busy = false;
    for (const std::uint32_t d : v.thief_of) {
      auto [actives, thieves] = domain(d);
      const int before = (*thieves)--;
      assert(*thieves >= 0 && "thieves never go negative");
      if (before != 1 || (why != leaving::found && *actives == 0)) continue;
      if (why == leaving::giving_up) {
        last_of_busy = true;
        v.napped_for.push_back(d);
      } else {
        notify(d == every_domain ? none : d, &v);
      }
    }
    return last_of_busy;
  }
  void become_active(worker& v) {
    if (v.active) return;
    v.active = true;
    v.active_in = v.pool;
    auto [a, t] = domain(v.pool);
    if ((*a)++ == 0 && *t == 0) notify(v.pool, &v);  // the first active worker wakes a thief (Algorithm 3)
    if (v.set.every()) {
      ++every_actives_;
      v.counted_every = true;
    }
  }
  void become_inactive(worker& v) {
    if (!v.active) return;
    v.active = false;
    --*domain(v.active_in).first;
    if (v.counted_every) {
      --every_actives_;
      v.counted_every = false;
    }
  }

  // Wakes one sleeping or napping worker whose published set holds `id`
  // (every pool if none), never `except`.
  void notify(std::uint32_t id, const worker* except) {
    const std::size_t n = workers_.size();
    const std::size_t start = rotor_++;
    for (std::size_t k = 0; k < n; ++k) {
      worker& v = workers_[(start + k) % n];
      if (&v == except || (v.m != mode::sleeping && v.m != mode::napping)) continue;
      if (id != none && !v.assigned.contains(id)) continue;
      wake(v);
      return;
    }
  }
  void wake(worker& v) {
    ++v.epoch;
    ++out_.wakes;
    set_mode(v, mode::looking);  // on its way: counted awake from the notification
    schedule_worker(v, wake_cost(), act::resume_wait);
  }

  // A wait that ends (a wake-up, or the nap's end) goes on where it slept:
  // exploring as a thief (Algorithm 5's loop), so a worker woken to take
  // over the thief role holds it, and hands it on if it finds work; only a
  // moved worker goes back to its loop top first.
  void resume_wait(worker& v) {
    if (v.assigned_version != v.accepted_version || v.pool == none) return loop_top(v, 0);
    v.napped_for.clear();
    set_mode(v, mode::looking);
    become_thief(v);
    v.failures = 0;
    probe(v, 0);
  }

  // Lemma 1 per domain: an active worker, a worker of the domain asleep in
  // the protocol, and no worker of it looking for work: no thief, none
  // napping, none on its way from a wake-up (a notified worker is counted
  // as the thief it is about to be, as in Taskflow's proof).
  bool undersubscribed() const {
    auto violated = [&](std::uint32_t d, int actives, int thieves) {
      if (actives <= 0 || thieves > 0) return false;
      bool sleeper = false;
      for (const worker& v : workers_) {
        const bool mine = d == every_domain ? v.set.every() : (!v.set.every() && v.set.contains(d));
        if (!mine) continue;
        if (v.m == mode::napping || v.m == mode::looking || v.m == mode::spinning) return false;
        sleeper = sleeper || v.m == mode::sleeping;
      }
      return sleeper;
    };
    for (std::uint32_t id = 0; id < pools_.size(); ++id)
      if (pools_[id].live && violated(id, pools_[id].actives, pools_[id].thieves)) return true;
    return violated(every_domain, every_actives_, every_thieves_);
  }

  // ---- the scheduling loop ------------------------------------------------------
  void loop_top(worker& v, double delay) {
    leave_thieves(v, leaving::moving);
    const bool moved = v.assigned_version != v.accepted_version;
    if (moved) {
      v.set = v.assigned;
      v.accepted_version = v.assigned_version;
    }
    // A worker the policy moves while it naps as a domain's last thief hands
    // the role on, as a moved thief does
    // (SchedLiveness.AThiefMovedAwayLeavesAThiefBehind); a nap that just
    // ended leaves it in the protocol, a thief again below.
    if (moved)
      for (const std::uint32_t d : v.napped_for) {
        auto [actives, thieves] = domain(d);
        if (*actives > 0 && *thieves == 0) notify(d == every_domain ? none : d, &v);
      }
    v.napped_for.clear();
    v.decide_request = false;
    const std::uint32_t target = pool_to_serve(v);
    if (target != v.pool && !(steal_boundary_ && !v.dq.empty())) {
      if (target == none) {
        leave(v);
        ++v.epoch;
        ++out_.sleeps;
        set_mode(v, mode::asleep);
        return;
      }
      move_to(v, target, delay);
    }
    v.donated = v.set.what == pool_set::kind::pools && v.set.count > 1 && v.pool != v.set.ids[0];
    if (!v.dq.empty()) return start_node(v, pop_bottom(v), delay);
    find_work(v, delay);
  }

  // Takes a deque left at pool `id` whole and runs its newest task (AMCilk's
  // mugging, Sec. 3.5).
  void mug(worker& v, std::uint32_t id, double delay) {
    pool_rec& p = pools_[id];
    std::deque<ref> d = std::move(p.muggable.back());
    p.muggable.pop_back();
    p.muggable_items -= d.size();
    move_to(v, id, delay);
    ++out_.mugs;
    v.dq = std::move(d);
    pool_rec& q = pools_[id];
    q.deque_items += v.dq.size();
    ++q.victims;
    start_node(v, pop_bottom(v), delay + c_.cost.mug_us);
  }
  // Runs the oldest task of pool `id`'s injection queue.
  void take_injected(worker& v, std::uint32_t id, double delay) {
    pool_rec& p = pools_[id];
    const ref r = p.injection.front();
    p.injection.pop_front();
    move_to(v, id, delay);
    start_node(v, r, delay);
  }

  void find_work(worker& v, double delay) {
    // Mug a left deque whole, most urgent pool first; a set of several pools
    // also takes from the injection queues; stop at the first pool with work.
    auto try_pool = [&](std::uint32_t id, bool injection) -> bool {
      pool_rec& p = pools_[id];
      if (!p.live) return false;
      if (!p.muggable.empty()) {
        mug(v, id, delay);
        return true;
      }
      if (injection && !p.injection.empty()) {
        take_injected(v, id, delay);
        return true;
      }
      return false;
    };
    if (v.set.every()) {
      for (const std::uint32_t id : ranked_live())
        if (try_pool(id, true)) return;
    } else {
      for (std::uint8_t i = 0; i < v.set.count; ++i) {
        if (try_pool(v.set.ids[i], v.set.count > 1)) return;
        if (v.set.count > 1 && ready(v.set.ids[i])) break;
      }
    }
    set_mode(v, mode::looking);
    become_thief(v);
    v.failures = 0;
    probe(v, delay);
  }

  std::vector<std::uint32_t> ranked_live() const {
    std::vector<std::uint32_t> ids;
    for (std::uint32_t id = 0; id < pools_.size(); ++id)
      if (pools_[id].live) ids.push_back(id);
    std::stable_sort(ids.begin(), ids.end(), [&](std::uint32_t a, std::uint32_t b) { return pools_[a].rank < pools_[b].rank; });
    return ids;
  }

  // Probe targets with work for this thief: the workers serving a pool it
  // may take from with a non-empty deque, plus its own index (the injection
  // queues and left deques) when one of those pools has any.
  unsigned targets(const std::vector<std::uint32_t>& from) const {
    unsigned k = 0;
    bool queued = false;
    for (const std::uint32_t id : from) {
      k += pools_[id].victims;
      queued = queued || pools_[id].queued();
    }
    return k + (queued ? 1 : 0);
  }
  double attempt_cost(unsigned from, unsigned n) const {
    const unsigned yielding = from + n > steal_bound_ ? from + n - std::max(from, steal_bound_) : 0;
    return n * c_.cost.failed_steal_us + yielding * c_.cost.yield_us;
  }
  // dt < 0 when a spinner is alerted before its spin began (probe's delay):
  // it made no attempt yet.
  unsigned attempts_in(unsigned from, double dt) const {
    if (dt <= 0) return 0;
    unsigned n = 0;
    if (from < steal_bound_) {
      const double plain = (steal_bound_ - from) * c_.cost.failed_steal_us;
      if (dt < plain) return static_cast<unsigned>(dt / c_.cost.failed_steal_us);
      dt -= plain;
      n = steal_bound_ - from;
    }
    return n + static_cast<unsigned>(dt / (c_.cost.failed_steal_us + c_.cost.yield_us));
  }
  unsigned budget_left(const worker& v) const {
    const unsigned total = steal_bound_ + c_.yield_bound;
    return v.failures < total ? total - v.failures : 0;
  }

  void probe(worker& v, double delay) {
    const std::vector<std::uint32_t> from = takeable(v);
    const unsigned k = targets(from);
    const unsigned left = budget_left(v);
    ++v.epoch;
    if (k == 0) {
      set_mode(v, mode::spinning);
      v.spin_start = now_ + delay;
      if (v.set.every()) every_spinners_.emplace_back(v.index, v.epoch);
      else
        for (const std::uint32_t id : from) pools_[id].spinners.emplace_back(v.index, v.epoch);
      schedule_worker(v, delay + attempt_cost(v.failures, left), act::give_up);
      return;
    }
    set_mode(v, mode::looking);
    const double p = std::min(1.0, static_cast<double>(k) / workers_.size());
    unsigned f = 0;
    if (p < 1) {
      const double u = std::max(unit(), 1e-300);
      const double x = std::floor(std::log(u) / std::log1p(-p));
      f = x >= left ? left : static_cast<unsigned>(x);
    }
    if (f >= left) {
      schedule_worker(v, delay + attempt_cost(v.failures, left), act::give_up);
      return;
    }
    const double t = delay + attempt_cost(v.failures, f) + c_.cost.steal_us;
    v.failures += f;
    schedule_worker(v, t, act::hit);
  }

  void probe_hit(worker& v) {
    const std::vector<std::uint32_t> from = takeable(v);
    std::vector<unsigned> victims;
    bool queued = false;
    for (const std::uint32_t id : from) queued = queued || pools_[id].queued();
    for (const worker& x : workers_)
      if (&x != &v && !x.dq.empty() && std::find(from.begin(), from.end(), x.pool) != from.end()) victims.push_back(x.index);
    const std::size_t slots = victims.size() + (queued ? 1 : 0);
    if (slots == 0) {  // taken meanwhile: one more failure
      ++v.failures;
      return probe(v, 0);
    }
    const auto pick = static_cast<std::size_t>(unit() * slots);
    double delay = 0;
    if (pick < victims.size()) {
      worker& victim = workers_[victims[pick]];
      const std::uint32_t id = victim.pool;
      const ref r = steal_top(victim);
      ++out_.steals;
      leave_thieves(v, leaving::found);
      move_to(v, id, delay);
      return start_node(v, r, delay);
    }
    for (const std::uint32_t id : from) {
      pool_rec& p = pools_[id];
      if (!p.injection.empty()) {
        leave_thieves(v, leaving::found);
        return take_injected(v, id, delay);
      }
      if (!p.muggable.empty()) {
        leave_thieves(v, leaving::found);
        return mug(v, id, delay);
      }
    }
  }

  // The thief spent its probes (Algorithm 5's wait): condition #1, then the
  // last thief of a busy domain naps; queued work it may not take passes the
  // wake-up on and it naps; otherwise it sleeps until notified.
  void give_up(worker& v) {
    if (v.assigned_version != v.accepted_version) return loop_top(v, 0);
    const std::vector<std::uint32_t> from = takeable(v);
    for (const std::uint32_t id : from)
      if (pools_[id].queued()) {
        v.failures = 0;
        return probe(v, 0);
      }
    if (c_.never_sleep) {
      v.failures = steal_bound_;
      return probe(v, 0);
    }
    bool nap = leave_thieves(v, leaving::giving_up);
    if (v.set.what == pool_set::kind::pools)
      for (std::uint8_t i = 0; i < v.set.count; ++i) {
        const std::uint32_t id = v.set.ids[i];
        if (std::find(from.begin(), from.end(), id) == from.end() && pools_[id].queued()) {
          notify(id, &v);
          nap = true;
        }
      }
    ++v.epoch;
    if (nap) {
      ++out_.naps;
      set_mode(v, mode::napping);
      schedule_worker(v, c_.cost.nap_us, act::resume_wait);
    } else {
      ++out_.sleeps;
      set_mode(v, mode::sleeping);
    }
  }

  void start_node(worker& v, ref r, double delay) {
    const std::uint32_t id = reqs_[r.req].pool;
    assert(id == v.pool && "a worker runs only nodes of the pool it serves");
    if (id != v.pool) ++violations_;
    set_mode(v, mode::running);
    become_active(v);
    v.current = r;
    ++pools_[id].running;
    ++pools_[id].started;
    if (reqs_[r.req].start < 0) reqs_[r.req].start = now_ + delay;
    ++v.epoch;
    const double work = w_.requests[r.req].nodes[r.node].work_us;
    out_.busy_us += work;
    schedule_worker(v, delay + c_.cost.node_us + work, act::finish);
    note(id);
  }

  void finish_node(worker& v) {
    const ref r = v.current;
    const std::uint32_t id = reqs_[r.req].pool;
    flush(v);
    --pools_[id].running;
    ++out_.nodes;
    request_state& s = reqs_[r.req];
    const request& q = w_.requests[r.req];
    std::vector<ref> enabled;
    for (const std::uint32_t x : q.nodes[r.node].succ)
      if (--s.preds_left[x] == 0) enabled.push_back({r.req, x});
    if (++s.done == q.nodes.size()) finish_request(r.req);
    for (std::size_t k = enabled.size(); k-- > 1;) push_bottom(v, enabled[k]);
    bool park = false;
    if (!steal_boundary_) {
      if (v.assigned_version != v.accepted_version || v.decide_request) park = true;
      else if (v.donated && ++v.boundaries_since_walk >= 4) {
        v.boundaries_since_walk = 0;
        park = ready_work_ranked_above(v.set, v.pool);
      }
    }
    if (park) {
      if (!enabled.empty()) push_bottom(v, enabled[0]);
      become_inactive(v);
      set_mode(v, mode::looking);
      note(id);
      return loop_top(v, 0);
    }
    if (!enabled.empty()) return start_node(v, enabled[0], 0);
    if (!v.dq.empty()) return start_node(v, pop_bottom(v), 0);
    become_inactive(v);
    set_mode(v, mode::looking);
    note(id);
    loop_top(v, 0);
  }

  void release(std::uint32_t r) {
    const request& q = w_.requests[r];
    request_state& s = reqs_[r];
    if (c_.pool_per_request) {
      s.pool = make_pool(q.pool);
      if (sizes_ && q.size_hint_us >= 0) sizes_->set(s.pool, q.size_hint_us * 1e-6);
      pending_.push_back({ext::event_kind::pool_added, s.pool, {}});
      request_decision();
    } else {
      s.pool = q.pool;
    }
    pool_rec& p = pools_[s.pool];
    // The runtime's note_nonempty: work made ready at a pool the policy
    // already believes non-empty is news only as a backlog, to a policy that
    // asked, once per pool between decisions.
    if (backlog_events_ && p.believed && p.injection.size() + 1 >= 2 && !p.backlog_posted) {
      p.backlog_posted = p.tell_backlog = true;
      request_decision();
    }
    p.injection.push_back({r, 0});
    alert_spinners(s.pool);
    note(s.pool);
    notify(s.pool, nullptr);
  }

  void finish_request(std::uint32_t r) {
    request_state& s = reqs_[r];
    const request& q = w_.requests[r];
    request_result& o = out_.requests[r];
    o.index = r;
    o.kind = q.kind;
    o.pool = q.pool;
    o.release_us = q.release_us;
    o.start_us = s.start;
    o.finish_us = now_;  // the node's end, its cost included
    o.response_us = o.finish_us - q.release_us;
    o.work_us = work_of(q);
    o.span_us = span_of(q);
    last_finish_ = std::max(last_finish_, o.finish_us);
    ++finished_;
    if (c_.pool_per_request) {
      pools_[s.pool].live = false;  // its last node is running: nothing of it is queued
      if (sizes_) sizes_->erase(s.pool);
      pending_.push_back({ext::event_kind::pool_removed, s.pool, {}});
      request_decision();
    }
  }

  // ---- decisions ------------------------------------------------------------------
  void request_decision() {
    if (decision_scheduled_) return;
    decision_scheduled_ = true;
    schedule(now_ + c_.cost.decision_us, act::decide, 0, 0);
  }

  void decide_pending() {
    decision_scheduled_ = false;
    std::vector<ext::event> events = std::move(pending_);
    pending_.clear();
    for (std::uint32_t id = 0; id < pools_.size(); ++id) {
      pool_rec& p = pools_[id];
      if (p.tell_nonempty && p.live) events.push_back({ext::event_kind::became_nonempty, id, {}});
      if (p.tell_empty && p.live) events.push_back({ext::event_kind::became_empty, id, {}});
      if (p.tell_backlog && p.live) events.push_back({ext::event_kind::backlog, id, {}});
      p.tell_nonempty = p.tell_empty = p.tell_backlog = false;
    }
    if (!events.empty()) decide_batch(std::move(events), false);
    arm_ticks();
  }

  void decide_batch(std::vector<ext::event> events, bool installed) {
    while (!events.empty()) {
      bool tick = false;
      for (const ext::event& ev : events) tick = tick || ev.kind == ext::event_kind::quantum;
      for (worker& v : workers_) flush(v);
      std::vector<std::uint32_t> ids = ranked_live();
      std::vector<unsigned> cores(pools_.size(), 0);
      for (const worker& v : workers_)
        if (const std::uint32_t f = v.assigned.first(); f < cores.size()) ++cores[f];
      std::vector<ext::pool_view> views;
      for (const std::uint32_t id : ids) {
        pool_rec& p = pools_[id];
        ext::pool_view pv;
        pv.id = id;
        pv.rank = p.rank;
        pv.weight = p.weight;
        pv.age = std::chrono::nanoseconds(static_cast<long long>((now_ - p.created) * 1e3));
        pv.has_ready_work = p.ready();
        pv.queued = p.injection.size();
        p.backlog_posted = false;  // this decision sees the queue
        pv.work_s = p.work_acc * 1e-6;
        pv.look_s = p.look_acc * 1e-6;
        pv.cores = cores[id];
        if (tick) {
          p.work_acc = p.look_acc = 0;
          pv.stalled = p.queued() && p.queued_at_tick && p.started == p.started_at_tick;
          p.started_at_tick = p.started;
          p.queued_at_tick = p.queued();
        }
        views.push_back(pv);
      }
      std::vector<ext::core_view> cv(workers_.size());
      for (worker& v : workers_) {
        ext::core_view& c = cv[v.index];
        c.index = v.index;
        c.target = v.assigned.target();
        c.assigned = v.assigned.first();
        c.pools.assign(v.assigned.ranked_ids().begin(), v.assigned.ranked_ids().end());
        c.serving = v.pool;
        c.work_s = v.work_acc * 1e-6;
        c.look_s = v.look_acc * 1e-6;
        if (tick) v.work_acc = v.look_acc = 0;
      }
      detail::decision_impl d(views, std::move(cv), quantum_, installed);
      for (const ext::event& ev : events) policy_->on_event(ev, d);
      apply(d.resolve(), installed);
      installed = false;
      quantum_ = d.quantum();
      ++out_.decisions;
      auto told = [&](ext::event_kind kind, std::uint32_t id) {
        return std::any_of(events.begin(), events.end(), [&](const ext::event& e) { return e.kind == kind && e.pool == id; });
      };
      std::vector<ext::event> next;
      for (const ext::pool_view& pv : views) {
        pool_rec& p = pools_[pv.id];
        const bool was = p.believed;
        p.believed = pv.has_ready_work;
        if (was && !pv.has_ready_work && !told(ext::event_kind::became_empty, pv.id))
          next.push_back({ext::event_kind::became_empty, pv.id, {}});
        else if (!was && pv.has_ready_work && !told(ext::event_kind::became_nonempty, pv.id))
          next.push_back({ext::event_kind::became_nonempty, pv.id, {}});
      }
      events = std::move(next);
    }
  }

  void apply(const std::vector<pool_set>& sets, bool first) {
    every_core_serves_every_pool_ = true;
    for (worker& v : workers_) {
      const pool_set& s = sets[v.index];
      if (!s.every()) every_core_serves_every_pool_ = false;
      if (s == v.assigned && !first) continue;
      v.assigned = s;
      ++v.assigned_version;
      switch (v.m) {
        case mode::asleep:
        case mode::sleeping:
        case mode::napping:
          if (s.asleep() && v.m == mode::asleep) break;
          if (first) {
            ++v.epoch;
            set_mode(v, mode::looking);
            schedule_worker(v, 0, act::loop_top);
          } else {
            wake(v);
          }
          break;
        case mode::looking:
        case mode::spinning:
          ++v.epoch;
          schedule_worker(v, 0, act::loop_top);
          break;
        case mode::running:
          break;  // at its next strand boundary
      }
    }
    // Every decision asks a working worker serving below ready work of its
    // set to walk it again.
    for (worker& v : workers_)
      if (v.m == mode::running && ready_work_ranked_above(v.set, v.pool)) v.decide_request = true;
  }

  void arm_ticks() {
    const double q = static_cast<double>(quantum_.count());
    if (tick_armed_ || q <= 0 || every_core_serves_every_pool_) return;
    if (busy_pools() >= busy_pools_for_quanta_) {
      tick_armed_ = true;
      last_tick_ = now_;
      schedule(now_ + q, act::tick, 0, 0);
    }
  }
  std::size_t busy_pools() const {
    std::size_t n = 0;
    for (const pool_rec& p : pools_)
      if (p.live && (p.busy_since_tick || p.believed)) ++n;
    return n;
  }
  void tick() {
    tick_armed_ = false;
    ++out_.quanta;
    decide_batch({{ext::event_kind::quantum, ext::no_pool,
                   std::chrono::nanoseconds(static_cast<long long>((now_ - last_tick_) * 1e3))}},
                 false);
    last_tick_ = now_;
    const bool keep = busy_pools() >= busy_pools_for_quanta_;
    for (pool_rec& p : pools_) p.busy_since_tick = p.ready();
    const double q = static_cast<double>(quantum_.count());
    if (keep && q > 0 && !every_core_serves_every_pool_) {
      tick_armed_ = true;
      schedule(now_ + q, act::tick, 0, 0);
    }
  }

  double unit() { return unit_interval(rng_); }
  // Its own generator: the probes' random sequence is the same with or without samples.
  double wake_cost() {
    const auto& s = c_.cost.wake_samples_us;
    if (s.empty()) return c_.cost.wake_us;
    return s[std::min(s.size() - 1, static_cast<std::size_t>(unit_interval(wake_rng_) * static_cast<double>(s.size())))];
  }

  const workload& w_;
  const config& c_;
  std::mt19937_64 rng_;
  std::mt19937_64 wake_rng_;  // wake-cost draws (wake_cost), seeded apart from rng_
  std::unique_ptr<ext::policy> policy_;
  std::shared_ptr<policy_impl::size_board> sizes_;  // serpt's: the requests' size hints
  bool steal_boundary_ = false;
  bool backlog_events_ = false;  // the policy asked for backlog events (ext::policy::wants_backlog_events)
  std::size_t busy_pools_for_quanta_ = 2;
  unsigned steal_bound_ = 0;
  std::vector<worker> workers_;
  std::vector<pool_rec> pools_;
  std::vector<request_state> reqs_;
  std::priority_queue<event, std::vector<event>, std::greater<>> q_;
  std::uint64_t seq_ = 0, creation_seq_ = 0;
  double now_ = 0, first_release_ = 0, last_finish_ = 0;
  std::size_t finished_ = 0;
  std::size_t rotor_ = 0;
  int every_actives_ = 0, every_thieves_ = 0;
  std::vector<std::pair<unsigned, std::uint32_t>> every_spinners_;
  std::vector<ext::event> pending_;
  bool decision_scheduled_ = false;
  std::chrono::microseconds quantum_{0};
  bool tick_armed_ = false, every_core_serves_every_pool_ = false;
  double last_tick_ = 0;
  std::uint64_t violations_ = 0;
  result out_;
};

}  // namespace

result simulate(const workload& w, const config& c) { return engine(w, c).run(); }

}  // namespace promptly::sim
