// The policy driver (policy_driver.hpp states the invariants).
#include "policy_driver.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

#include <pthread.h>
#include <time.h>

#include "chaos.hpp"
#include "os_time_slice.hpp"
#include "decision.hpp"
#include "set_walk.hpp"
#include "worker_accounts.hpp"

namespace promptly::detail {

namespace {
// An event the policy threw on is retried no sooner than this after the
// last failure (docs/policies.md, "Rules"); meanwhile the workers sleep.
constexpr std::uint64_t retry_delay_ns = 1'000'000;
// Ready work that no core has served for this long while a core idles and
// no decision is pending is reported (watch_unserved_locked). Far above any
// decision latency (p99 well under 1 ms), short enough to be seen by a
// person waiting for a hung program.
constexpr std::uint64_t unserved_report_ns = 200'000'000;
// Decisions note unserved pools at most this often (a note walks every pool
// with work; a size-aware policy decides thousands of times a second over
// hundreds of them). Coarse next to unserved_report_ns; a decision between
// two notes leaves one pending, which the policy thread takes when due.
constexpr std::uint64_t unserved_note_interval_ns = 10'000'000;
}  // namespace

std::vector<ext::core_view> policy_driver::view_cores_locked(bool advance) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  const std::uint64_t now = now_ns();
  if (seen_core_work_ns_.size() != worker_count()) {
    seen_core_work_ns_.assign(worker_count(), 0);
    seen_core_look_ns_.assign(worker_count(), 0);
  }
  // The policy sees the usable cores only (set_core_limit); apply_locked
  // puts the others to sleep.
  std::vector<ext::core_view> cores(usable_cores());
  for (std::size_t c = 0; c < cores.size(); ++c) {
    worker& w = *workers_[c];
    const open_interval open = open_interval_of(w, now);
    const std::uint64_t work = w.work_ns.load(std::memory_order_relaxed) + (open.working ? open.ns : 0);
    const std::uint64_t look = w.look_ns.load(std::memory_order_relaxed) + (open.working ? 0 : open.ns);
    ext::core_view& v = cores[c];
    v.index = static_cast<unsigned>(c);
    const pool_set& a = applied_[c];
    v.target = a.target();
    v.assigned = a.first();
    v.pools.assign(a.ranked_ids().begin(), a.ranked_ids().end());
    v.serving = open.pool;
    v.work_s = seconds_of(work > seen_core_work_ns_[c] ? work - seen_core_work_ns_[c] : 0);
    v.look_s = seconds_of(look > seen_core_look_ns_[c] ? look - seen_core_look_ns_[c] : 0);
    if (advance) {
      seen_core_work_ns_[c] = work;
      seen_core_look_ns_[c] = look;
    }
  }
  return cores;
}

// CPU time beside wall time, at quantum ticks: a core the OS preempted
// is "working" by the wall clock (on a loaded machine a 3:1 share policy
// drifted to 4.1-4.4:1 in work done while work_s said 3:1). Each core's
// thread CPU clock is read here, once per tick (a system call per core per
// quantum, none on the workers' paths); the core's CPU time, up to its
// wall work time, is counted at the pool the previous decision put first
// in its set (the pool it serves if it serves
// every pool). Cores move between pools inside a quantum without being
// read, so a pool's cpu_s is an estimate; a core's is exact.
void policy_driver::add_cpu_time_locked(std::vector<ext::core_view>& cores) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (seen_core_cpu_ns_.size() != worker_count()) seen_core_cpu_ns_.assign(worker_count(), 0);
  // The kept view's positions credited by this tick: each starts from 0 at
  // its first credit, so a pool the tick did not read again (a core's
  // serving pool read after the view was) shows this tick's time only.
  std::vector<std::uint32_t> credited;
  for (std::size_t c = 0; c < cores.size(); ++c) {
    clockid_t clock;
    timespec ts{};
    if (pthread_getcpuclockid(workers_[c]->thread.native_handle(), &clock) != 0 || clock_gettime(clock, &ts) != 0)
      continue;  // the thread has ended (shutdown)
    const std::uint64_t cpu = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
    const std::uint64_t delta = cpu > seen_core_cpu_ns_[c] ? cpu - seen_core_cpu_ns_[c] : 0;
    seen_core_cpu_ns_[c] = cpu;
    ext::core_view& v = cores[c];
    v.cpu_s = seconds_of(delta);
    const double wall = v.work_s + v.look_s;
    if (wall <= 0) continue;
    const ext::pool_id id = v.target == ext::core_target::pool ? v.assigned : v.serving;
    // Looking may sleep (no CPU) or spin: the CPU time is counted as work up
    // to the core's wall work time, exact for a core preempted while working
    // or sleeping while looking, an overestimate only for one both spinning
    // and preempted. (Scaling the CPU time by the work fraction instead
    // counted a sleeping thief's core twice as idle: under fair 1:3 on a
    // loaded machine, level 0 was credited 0.46 of the work.)
    view_.credit_cpu(id, std::min(v.cpu_s, v.work_s), credited);
  }
  view_.end_credit(credited);
}

// Cores whose set's most urgent pool is each pool id ever made (cores
// serving every pool count nowhere). The caller holds policy_mutex_.
std::vector<unsigned> policy_driver::cores_by_pool() const {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::vector<unsigned> cores(pools_.id_end(), 0);
  for (const pool_set& a : applied_)
    if (const std::uint32_t first = a.first(); first < cores.size()) ++cores[first];
  return cores;
}

// One decision on one view for a batch of events (coalesced: the policy
// hears each event, in order, then the runtime applies what it did once).
// The batch is the caller's decision (installed, a tick): if the policy
// throws on it, nothing is applied and the caller hears of it. What the
// decision causes (belief flips, below) is decided afterwards like any
// event: a throw there sets that event aside for a retry.
void policy_driver::decide_locked(std::vector<ext::event> events) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::size_t failed = 0;
  decide_isolating_locked(decide_once_locked(events, failed));
}

void policy_driver::decide_isolating_locked(std::vector<ext::event> events) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  // Each failure removes one event, so this ends; an event that throws
  // cannot keep the others of its batch from being decided.
  while (!events.empty()) {
    std::size_t failed = events.size();
    [[maybe_unused]] const std::size_t before = events.size();
    try {
      events = decide_once_locked(events, failed);
      continue;
    } catch (const std::exception& e) {
      policy_failed_locked(events, failed, e.what());
    } catch (...) {
      policy_failed_locked(events, failed, "an exception that is not a std::exception");
    }
    assert(events.size() == before - 1 && "a failure sets exactly one event aside");
  }
}

// Sets events[failed] aside for a retry and removes it from `events`. A
// quantum tick is not retried: the next one comes anyway.
void policy_driver::policy_failed_locked(std::vector<ext::event>& events, std::size_t failed, const char* what) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (failed >= events.size()) throw;  // not the policy's (views, applying): the caller reports it
  const ext::event ev = events[failed];
  events.erase(events.begin() + static_cast<std::ptrdiff_t>(failed));
  ++policy_failures_;
  if (!policy_failure_reported_) {
    policy_failure_reported_ = true;
    std::fprintf(stderr,
                 "promptly: policy '%.*s' threw on an event (kind %d, pool %u): %s; the event is retried 1 ms later, and "
                 "further failures are only counted (runtime_stats::policy_failures)\n",
                 static_cast<int>(policy_->name().size()), policy_->name().data(), static_cast<int>(ev.kind), ev.pool,
                 what);
  }
  retry_at_ns_ = now_ns() + retry_delay_ns;
  if (ev.kind == ext::event_kind::quantum || ev.kind == ext::event_kind::installed) return;
  const pool_record* p = ev.pool == ext::no_pool ? nullptr : pools_.find(ev.pool);
  std::uint64_t seq = 0;
  if (p != nullptr) {
    std::lock_guard identity(pools_.mutex());  // creation_seq is written under it
    seq = p->creation_seq;
  }
  deferred_.push_back({ev, seq});
}

std::vector<ext::event> policy_driver::decide_once_locked(const std::vector<ext::event>& events, std::size_t& failed) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  bool tick = false, installed = false;
  for (const ext::event& ev : events) {
    tick = tick || ev.kind == ext::event_kind::quantum;
    installed = installed || ev.kind == ext::event_kind::installed;
  }
  view_.refresh(installed, tick, events, applied_);
  const std::span<const ext::pool_view> pools = view_.pools();
  try {
    std::vector<ext::core_view> cores = view_cores_locked(tick);
    if (tick) add_cpu_time_locked(cores);
    decision_impl d(pools, view_.index_by_id(), view_.with_work(), std::move(cores), quantum_, installed);
    d.set_pool_id_end(pools_.id_end());
    // A throw leaves d unapplied: the decision is all or none.
    for (failed = 0; failed < events.size(); ++failed) policy_->on_event(events[failed], d);
    failed = events.size();  // a throw below is not the policy's
    apply_locked(d.resolve());
    quantum_ = d.quantum();
    for (const ext::pool_id pool : d.preempted()) standbys_.send_locked(pool, tracing_ ? &policy_trace_ : nullptr);
  } catch (...) {
    // The beliefs below were not set from this view: the retry reads these pools again.
    view_.read_refreshed_again();
    throw;
  }
  if (tracing_) [[unlikely]]
    policy_trace_.record(trace_kind::decision, now_ns(), events.size() == 1 ? events[0].pool : no_pool,
                         static_cast<std::uint32_t>(events.size()));
  if (tick) {  // the pools the tick read: any other accrued nothing in the quantum (kept_view::refresh)
    last_quantum_.clear();
    for (const std::uint32_t id : view_.refreshed())
      if (const ext::pool_view* v = view_.find(id)) last_quantum_.push_back(*v);
    std::ranges::sort(last_quantum_, {}, &ext::pool_view::id);
  }
  for (const ext::event& ev : events)
    if (ev.kind == ext::event_kind::more_cores_requested)
      if (pool_record* p = pools_.find(ev.pool)) {
        p->wants_more_cores.store(false, std::memory_order_relaxed);
        view_.read_again(ev.pool);  // the kept view must not repeat the request
      }
  ++decisions_;
  trace_locked(pools);
  if (const std::uint64_t now = now_ns(); now >= last_unserved_note_ns_ + unserved_note_interval_ns) {
    note_unserved_locked(now);
  } else if (!unserved_note_pending_) {
    unserved_note_pending_ = true;
    board_.poke_driver();  // watch_unserved_locked takes it when due
  }
  // The belief follows the view. A flip the policy was not told of by an
  // event of this batch becomes an event of the next one: a pool seen
  // empty here is no news to the worker that reports it a moment later
  // (handle_events_locked drops it), so an event-driven policy would
  // never hear that the pool emptied (or, symmetrically, filled).
  auto told = [&](ext::event_kind kind, ext::pool_id id) {
    return std::any_of(events.begin(), events.end(), [&](const ext::event& e) { return e.kind == kind && e.pool == id; });
  };
  // Only the pools this view read again can have flipped (kept_view::refresh).
  std::vector<ext::event> next;
  for (const std::uint32_t id : view_.refreshed()) {
    const ext::pool_view* listed = view_.find(id);
    if (listed == nullptr) continue;
    const ext::pool_view& v = *listed;
    pool_record& p = pool_at(v.id);
    const bool was = p.believed_nonempty.exchange(v.has_ready_work, std::memory_order_seq_cst);
    if (!v.has_ready_work && p.has_ready_work()) {  // work arrived while we decided
      p.believed_nonempty.store(true, std::memory_order_seq_cst);
      next.push_back({ext::event_kind::became_nonempty, v.id, {}});
    } else if (was && !v.has_ready_work && !told(ext::event_kind::became_empty, v.id)) {
      next.push_back({ext::event_kind::became_empty, v.id, {}});
    } else if (!was && v.has_ready_work && !told(ext::event_kind::became_nonempty, v.id)) {
      next.push_back({ext::event_kind::became_nonempty, v.id, {}});
    }
  }
  return next;
}

// Work that no core will serve. A policy may leave a pool with work and no
// core on purpose (prompt starves a level while a more urgent one has
// work), so what is reported is narrower: the pool has had ready work and no
// core for unserved_report_ns, a core idles (asleep, or no pool of its set
// has ready work) and nothing is left to decide (no event posted or set
// aside). A policy that never gives the pool a core then hangs the program
// (a destructor waiting for the pool's task): it is said once on stderr and
// in stats(). Decisions note candidates from the pools with work of the
// view they decided on; the policy thread checks them at the deadline.
// Walks the kept view's pools with work (kept_view::with_work) and the cores'
// sets, not every pool: a decision costs what changed (kept_view::refresh).
// unserved_ is kept sorted by id.
void policy_driver::note_unserved_locked(std::uint64_t now) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  last_unserved_note_ns_ = now;
  unserved_note_pending_ = false;
  const std::optional<std::vector<std::uint32_t>> served = served_pools_locked();
  if (!served) {
    unserved_.clear();
    return;
  }
  auto is_served = [&](std::uint32_t id) { return std::binary_search(served->begin(), served->end(), id); };
  std::erase_if(unserved_, [&](const unserved_pool& u) { return is_served(u.id); });
  const std::size_t listed = unserved_.size();
  {
    std::lock_guard identity(pools_.mutex());  // creation_seq is written under it
    for (const ext::pool_view& v : view_.with_work()) {
      if (!v.has_ready_work || is_served(v.id)) continue;
      const auto first = unserved_.begin(), last = first + static_cast<std::ptrdiff_t>(listed);
      const auto it = std::lower_bound(first, last, v.id, [](const unserved_pool& u, std::uint32_t id) { return u.id < id; });
      if (it != last && it->id == v.id) continue;
      unserved_.push_back({v.id, pool_at(v.id).creation_seq, now, false});
    }
  }
  if (unserved_.size() == listed) return;
  std::inplace_merge(unserved_.begin(), unserved_.begin() + static_cast<std::ptrdiff_t>(listed), unserved_.end(),
                     [](const unserved_pool& a, const unserved_pool& b) { return a.id < b.id; });
  // The new entries are due at now + unserved_report_ns, no earlier than
  // the entries listed before them.
  if (listed == 0 || unserved_check_ns_ == 0) unserved_check_ns_ = now + unserved_report_ns;
  board_.poke_driver();  // to arm the check (driver_main)
}

// The pools of the usable cores' sets, sorted; nullopt if a core serves
// every pool (then no pool is unserved).
std::optional<std::vector<std::uint32_t>> policy_driver::served_pools_locked() const {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::vector<std::uint32_t> served;
  const unsigned usable = usable_cores();
  for (unsigned c = 0; c < usable; ++c) {
    if (applied_[c].every()) return std::nullopt;
    for (const std::uint32_t id : applied_[c].ranked_ids()) served.push_back(id);
  }
  std::sort(served.begin(), served.end());
  return served;
}

// Returns when to look again (0: nothing to watch). The driver's loop calls
// it after every batch of events, so it walks unserved_ only once the
// earliest entry can be due (unserved_check_ns_): with hundreds of queued
// jobs that a size-aware policy leaves unserved by design, a walk per
// batch cost more than the decisions themselves. Entries whose pool was
// served or removed meanwhile wait for that walk (note_unserved_locked
// drops the served ones at each decision).
std::uint64_t policy_driver::watch_unserved_locked(std::uint64_t now) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::uint64_t note_due = 0;  // a decision's note left pending
  if (unserved_note_pending_) {
    note_due = last_unserved_note_ns_ + unserved_note_interval_ns;
    if (now >= note_due) {
      note_unserved_locked(now);
      note_due = 0;
    }
  }
  auto sooner = [note_due](std::uint64_t at) { return note_due != 0 && (at == 0 || note_due < at) ? note_due : at; };
  if (unserved_.empty()) return sooner(0);
  if (now < unserved_check_ns_) return sooner(unserved_check_ns_);
  const std::optional<std::vector<std::uint32_t>> served = served_pools_locked();
  if (!served) {
    unserved_.clear();
    return sooner(0);
  }
  const std::uint32_t end = pools_.id_end();
  {
    std::lock_guard identity(pools_.mutex());  // creation_seq is written under it
    std::erase_if(unserved_, [&](const unserved_pool& u) {
      if (u.id >= end) return true;
      const pool_record& p = pool_at(u.id);
      const pool_phase ph = p.phase.load(std::memory_order_relaxed);
      if (ph != pool_phase::live && ph != pool_phase::closing) return true;
      if (p.creation_seq != u.creation_seq) return true;
      return !p.has_ready_work() || std::binary_search(served->begin(), served->end(), u.id);
    });
  }
  bool idle_core = false;
  const unsigned usable = usable_cores();
  for (unsigned c = 0; c < usable && !idle_core; ++c) {
    const pool_set& a = applied_[c];
    idle_core = std::none_of(a.ranked_ids().begin(), a.ranked_ids().end(),
                             [&](std::uint32_t id) { return id < end && pool_at(id).has_ready_work(); });
  }
  const bool nothing_to_decide = !board_.events_posted() && deferred_.empty();
  std::uint64_t next = 0;
  for (unserved_pool& u : unserved_) {
    if (u.reported) continue;
    if (now >= u.since_ns + unserved_report_ns && idle_core && nothing_to_decide) {
      u.reported = true;
      std::fprintf(stderr,
                   "promptly: no core serves pool %u (%s), which has had ready work for %.1f s while a core idles: "
                   "policy '%.*s' gives it none, and what waits for that work will wait forever "
                   "(stats(): unserved_since_s)\n",
                   u.id, u.id < level_count() ? "a level" : "a pool made by create_pool",
                   static_cast<double>(now - u.since_ns) * 1e-9, static_cast<int>(policy_->name().size()),
                   policy_->name().data());
      continue;
    }
    const std::uint64_t at = std::max(u.since_ns + unserved_report_ns, now + unserved_report_ns);
    if (next == 0 || at < next) next = at;
  }
  unserved_check_ns_ = next;
  return sooner(next);
}

unsigned policy_driver::usable_cores() const noexcept {
  const unsigned limit = core_limit_.load(std::memory_order_relaxed);  // relaxed: written under policy_mutex_, which the readers hold
  return limit == 0 ? worker_count() : limit;
}

// Publishes the resolved assignment of the usable cores (the cores past
// the limit sleep). A core whose assignment changed gets a new word (a
// one-pool set is the pool id; a larger set, or every pool, is published in
// the worker's buffer first, assignment.hpp) and is woken: a waiting worker
// re-reads its word after preparing to wait (`moved`) and leaves its wait.
//
// Every word is stored before the first wake-up. A woken worker may preempt
// the deciding thread on its core (the kernel favours a thread that slept),
// and the decider can wait there for milliseconds while another core
// idles: storing and waking core by core left a new job's second core
// asleep with its old word meanwhile (2 cores, 5% load: a job's time on one
// core was 349-383 us mean, p90 0.9-1.2 ms; now 148-197 us, p90 0.14-0.31
// ms: bench/results/jobs/overheads/ab-apply-wakes/). With the words stored
// first, the worker that starts the job wakes the next one itself as the
// pool's first active worker (Taskflow's Algorithm 3: the sleeper's word
// now matches the pool, sleep_protocol::notify_matching).
void policy_driver::apply_locked(const std::vector<pool_set>& next) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  assert(next.size() == usable_cores() && "the policy decided over the usable cores");
  const bool every = !next.empty() && std::all_of(next.begin(), next.end(), [](const pool_set& a) { return a.every(); });
  // Seq-cst, before the words: a submitter that reads the new words also
  // reads this (note_nonempty).
  if (board_.modes.every_core_serves_every_pool.load(std::memory_order_relaxed) != every)
    board_.modes.every_core_serves_every_pool.store(every, std::memory_order_seq_cst);
  notifier::fence_before_notify();
  for (std::size_t c = 0; c < worker_count(); ++c) {  // the cores: the standbys are preemption.cpp's
    to_wake_[c] = false;
    worker& w = *workers_[c];
    const pool_set target = c < next.size() ? next[c] : pool_set::none();
    if (applied_[c] == target) {
      // A working worker serving below ready work of its ranked set is asked
      // to re-walk it (a waiting one steals from its whole set anyway). Its
      // loop top would take that work (pool_to_serve), but a task that runs
      // long, or a deque that keeps it busy at the less urgent pool, may
      // keep it from its loop top; decide_request parks the task at its
      // next strand boundary. A pool ranked above with work in its workers'
      // deques sends no event (it was never empty), so without this a
      // worker that donated itself stayed away until its deque ran dry.
      if (!notifier::is_waiting(w.slot) && set_walk::ready_work_ranked_above(target, w.serving.load(std::memory_order_relaxed), pools_.ready_in_pool()))
        board_.ask_to_decide(w);  // relaxed serving: a hint; the loop top decides
      continue;
    }
    for (const std::uint32_t id : applied_[c].ranked_ids()) view_.read_again(id);  // its cores changed
    applied_[c] = target;
    const unsigned word = target.asleep()                                  ? no_pool
                          : target.what == pool_set::kind::pools && target.count == 1 ? target.ids[0]
                                                                         : w.published.publish(target);
    w.reassigned_ns.store(now_ns(), std::memory_order_relaxed);  // relaxed: a statistic (worker.hpp)
    // Seq-cst: a worker about to sleep re-reads its assignment after
    // preparing to wait, and notify() below then finds it waiting.
    w.assigned.store(word, std::memory_order_seq_cst);
    to_wake_[c] = true;
  }
  notifier::fence_before_notify();
  bool woke_one = false;
  for (std::size_t c = 0; c < worker_count(); ++c) {
    if (!to_wake_[c]) continue;
    if (woke_one) chaos::decision_wake_gate.pass();
    notifier::notify(workers_[c]->slot);
    woke_one = true;
  }
}

const ext::pool_view* policy_driver::last_quantum_view(std::uint32_t id) const noexcept {
  const auto it = std::ranges::lower_bound(last_quantum_, id, {}, &ext::pool_view::id);
  return it != last_quantum_.end() && it->id == id ? &*it : nullptr;
}

void policy_driver::trace_locked(std::span<const ext::pool_view> pools) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (!trace_.is_open()) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const std::vector<unsigned> cores = cores_by_pool();  // after the decision was applied
  for (const ext::pool_view& v : pools) {
    const ext::pool_view* q = last_quantum_view(v.id);
    const double util = q != nullptr ? q->utilization() : 0.0;
    trace_ << t << ',' << policy_->name() << ',' << v.id << ',' << policy_->desire(v.id) << ',' << cores[v.id] << ',' << util << ','
           << (pool_at(v.id).has_ready_work() ? 1 : 0) << '\n';
  }
}

void policy_driver::handle_events_locked() {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  // Take every posted event first (the bitmaps clear as they are read), then
  // decide on them in one batch. Events the policy threw on before come
  // first (they are older) once their retry is due.
  std::vector<ext::event> events;
  std::vector<std::uint64_t> generation;  // the creation_seq an event is about (deferred events)
  constexpr std::uint64_t current = ~std::uint64_t{0};
  if (!deferred_.empty() && now_ns() >= retry_at_ns_) {
    for (const deferred_event& d : deferred_) {
      events.push_back(d.ev);
      generation.push_back(d.creation_seq);
    }
    deferred_.clear();
  }
  // Removals first (event_board::take): an id removed and taken again since
  // the last wake is live, and the policy must hear of it last as added.
  const std::uint64_t posted_ns = board_.take([&](ext::event_kind kind, std::uint32_t id) {
    events.push_back({kind, id, {}});
    generation.push_back(current);
  });
  const std::uint32_t end = pools_.id_end();
  std::vector<ext::event> decide;
  std::size_t retried = 0;  // decide's first entries, taken from deferred_
  for (std::size_t i = 0; i < events.size(); ++i) {
    const ext::event& ev = events[i];
    const bool lifecycle = ev.kind == ext::event_kind::pool_added || ev.kind == ext::event_kind::pool_removed;
    if (!lifecycle) {
      // An event of a pool removed since is no news to anyone, and one
      // posted for the pool that had the id before is not the live pool's:
      // dropped (a request of a removed pool used to reach the policy, whose
      // answer then threw, and the next pool on the id inherited it).
      // Relaxed phase: the view re-reads it; a pool removed meanwhile is
      // covered by the contract (actions on it are ignored).
      const pool_record* p = ev.pool < end ? &pool_at(ev.pool) : nullptr;
      const pool_phase ph = p != nullptr ? p->phase.load(std::memory_order_relaxed) : pool_phase::free;
      if (ph != pool_phase::live && ph != pool_phase::closing) continue;
      if (generation[i] != current) {
        std::lock_guard identity(pools_.mutex());  // creation_seq is written under it
        if (generation[i] != p->creation_seq) continue;
      }
      if (ev.kind == ext::event_kind::more_cores_requested && !p->wants_more_cores.load(std::memory_order_relaxed))
        continue;  // decided already, or asked by the pool that had the id before (create_pool clears it)
    }
    // A retried event posted again. Only the retried events (first in
    // `decide`) can repeat one: a bitmap holds one event per kind and pool,
    // so a batch of E new events is not searched E^2 times.
    const auto retried_end = decide.begin() + static_cast<std::ptrdiff_t>(retried);
    if (std::find_if(decide.begin(), retried_end, [&](const ext::event& e) { return e.kind == ev.kind && e.pool == ev.pool; }) !=
        retried_end)
      continue;
    if (ev.kind == ext::event_kind::became_nonempty) {
      if (board_.modes.every_core_serves_every_pool.load(std::memory_order_relaxed)) continue;
      if (std::find(nonempty_since_tick_.begin(), nonempty_since_tick_.end(), ev.pool) == nonempty_since_tick_.end())
        nonempty_since_tick_.push_back(ev.pool);
    } else if (ev.kind == ext::event_kind::became_empty) {
      if (board_.modes.every_core_serves_every_pool.load(std::memory_order_relaxed)) continue;
      const pool_record& p = pool_at(ev.pool);
      if (!p.believed_nonempty.load(std::memory_order_seq_cst) || p.has_ready_work()) continue;  // not news
    }
    decide.push_back(ev);
    if (generation[i] != current) ++retried;
  }
  if (decide.empty()) return;
  decide_isolating_locked(std::move(decide));
  if (posted_ns != 0) record_latency_locked(now_ns() - posted_ns);
}

void policy_driver::record_latency_locked(std::uint64_t ns) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  constexpr std::size_t kept = 4096;  // the most recent decisions
  if (latency_ns_.size() < kept)
    latency_ns_.push_back(ns);
  else
    latency_ns_[latency_next_ % kept] = ns;
  ++latency_next_;
}

// A worker at its loop top decides pending events when no decision is under
// way. If the policy throws, the events go back and the policy thread, woken
// when they were posted, retries. Only the policy thread arms the quantum
// timer, so it is woken when quanta may have to start.
//
// A worker with work of its own never waits for the lock (try_lock): it goes
// on working, and the holder or the policy thread decides. An idle worker
// (`idle`: no continuation, an empty deque) waits for the holder while a
// became_nonempty bit is set: until it is decided the worker has nothing
// to run, since moved() holds and it cannot even look for queued work.
// When it went back to its loop top instead, it spun there, and a holder
// descheduled on the same CPU could not finish until the kernel preempted
// the spinner: with one worker on one CPU, aps's policy thread preempted
// mid-tick left ready client loops waiting 4.9-5.3 ms
// (bench/results/apps/open-loop/no-compression/). Any other event (the
// pool it found empty, a pool added) leaves it free to look for work, so
// it does not wait: a holder descheduled after waking a core then kept
// the idle worker from stealing the work that core made ready
// (job_policies_test, TheFirstCoreWokenWakesTheNext...). It pokes the
// policy thread, which decides the events after the holder; it does not
// spin, because an event it posted again while one is pending is no new
// work for it (note_maybe_empty), and its wait then commits. Waiting
// cannot deadlock: no holder of policy_mutex_ waits for a worker (the
// policy thread, the API calls that install a policy or read stats, and
// loop tops only decide, and a policy's on_event must never block:
// docs/policies.md, "Rules").
void policy_driver::decide_at_loop_top(bool idle) noexcept {
  std::unique_lock lock(policy_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (!idle || !board_.nonempty_posted()) {
      // Posted without waking the thread (post_event, decider::poster): a
      // failed try_lock orders nothing, so the holder may have missed them.
      if (board_.events_posted()) board_.poke_driver();
      return;
    }
    lock.lock();  // throws only if this thread held the lock, which a loop top never does
    if (!board_.events_posted()) return;  // the holder decided them
  }
  if (stopping_.load(std::memory_order_relaxed)) return;
  try {
    handle_events_locked();  // a policy's exception stays inside (deferred_)
  } catch (...) {
    board_.poke_driver();  // views or applying failed (memory): the policy thread retries and reports
    return;
  }
  const bool arm_quantum =
      !next_quantum_ && quantum_.count() > 0 && !board_.modes.every_core_serves_every_pool.load(std::memory_order_relaxed);
  const bool retry = !deferred_.empty();  // only the policy thread keeps the retry's deadline
  lock.unlock();
  // A pool added or removed while this decision ran may have asked a worker
  // whose word the decision then overwrote (a new assignment clears
  // decide_request): nobody would be asked any more. (became_nonempty is
  // safe: every loop top reads its bits.) The fence pairs with the poster's
  // (ask_workers_to_decide): its request precedes the overwriting store in
  // the word's order, so the poster's fence precedes this one and the bit
  // it set before is seen here.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (arm_quantum || retry || board_.lifecycle_posted()) board_.poke_driver();
}

// Ticks when the deadline has passed, and (re)arms or disarms the quantum.
void policy_driver::advance_quantum_locked(std::chrono::steady_clock::time_point now) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  if (quantum_.count() == 0 || board_.modes.every_core_serves_every_pool.load(std::memory_order_relaxed)) {
    next_quantum_.reset();
    nonempty_since_tick_.clear();
    return;
  }
  auto busy_pools = [&] {
    // The pools believed non-empty are those with work at the last view
    // (the belief follows the view, decide_locked): no walk of every pool.
    std::vector<std::uint32_t> busy = nonempty_since_tick_;
    const std::span<const ext::pool_view> views = view_.pools();
    for (const std::uint32_t at : view_.busy_positions()) {
      if (busy.size() >= nonempty_since_tick_.size() + 4) break;
      if (at < views.size() && pool_at(views[at].id).believed_nonempty.load(std::memory_order_relaxed))
        busy.push_back(views[at].id);
    }
    std::sort(busy.begin(), busy.end());
    return static_cast<std::size_t>(std::unique(busy.begin(), busy.end()) - busy.begin());
  };
  if (!next_quantum_) {
    if (busy_pools() >= busy_pools_for_quanta_) {
      next_quantum_ = now + quantum_;
      last_tick_ = now;
    }
    return;
  }
  if (now < *next_quantum_) return;
  // A tick the policy throws on is counted and not retried: the next comes anyway.
  decide_isolating_locked({{ext::event_kind::quantum, ext::no_pool, std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_tick_)}});
  // A tick's latency: from its deadline to the decision applied.
  record_latency_locked(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - *next_quantum_).count()));
  last_tick_ = now;
  ++quanta_;
  const bool keep_going = busy_pools() >= busy_pools_for_quanta_;
  nonempty_since_tick_.clear();
  if (!keep_going || quantum_.count() == 0) {
    next_quantum_.reset();
    return;
  }
  *next_quantum_ += quantum_;
  if (*next_quantum_ < now) *next_quantum_ = now + quantum_;  // fell behind (the VM paused us): do not burst
}

void policy_driver::driver_main() {
  // With standby threads, the thread that sends them asks for the shortest slice too: its
  // timer must get a CPU beside the strands it exists to get past (preemption.cpp).
  (void)request_os_time_slice(standby_count() != 0 && cfg_.os_time_slice.count() == 0 ? min_os_time_slice
                                                                                      : cfg_.os_time_slice);
  using clock = std::chrono::steady_clock;
  for (;;) {
    std::optional<clock::time_point> wake_at;
    {
      std::lock_guard lock(policy_mutex_);
      if (stopping_.load(std::memory_order_relaxed)) return;
      board_.clear_poke();
      // An event the policy threw on is set aside (deferred_) and its
      // retry is due at retry_at_ns_: the thread sleeps until then, and so
      // do idle workers (the bits they wait on are cleared), rather than
      // retry at once (100k calls a second).
      std::uint64_t due_ns = 0;
      try {
        chaos::point();
        handle_events_locked();
        advance_quantum_locked(clock::now());
        if (!deferred_.empty()) due_ns = retry_at_ns_;
      } catch (const std::exception& e) {  // not the policy's (it cannot throw out of handle_events_locked)
        std::fprintf(stderr, "promptly: policy thread: %s; trying again in 1 ms\n", e.what());
        due_ns = now_ns() + retry_delay_ns;
      }
      if (const std::uint64_t check = watch_unserved_locked(now_ns()); check != 0 && (due_ns == 0 || check < due_ns))
        due_ns = check;
      try {
        if (const std::uint64_t check = watch_preemption_locked(now_ns()); check != 0 && (due_ns == 0 || check < due_ns))
          due_ns = check;
      } catch (const std::exception& e) {  // memory for the watch list: the next arrival arms it again
        std::fprintf(stderr, "promptly: policy thread: preemption watch: %s\n", e.what());
      }
      wake_at = next_quantum_;
      if (due_ns != 0) {
        const std::uint64_t now = now_ns();
        const clock::time_point due = clock::now() + std::chrono::nanoseconds(due_ns > now ? due_ns - now : 0);
        if (!wake_at || due < *wake_at) wake_at = due;
      }
    }
    notifier::prepare_wait(board_.driver_slot());
    if (stopping_.load(std::memory_order_seq_cst) || board_.events_posted() || board_.poked()) {
      notifier::cancel_wait(board_.driver_slot());
      continue;
    }
    if (!wake_at) {
      notifier::commit_wait(board_.driver_slot());
      continue;
    }
    const auto left = *wake_at - clock::now();
    if (left <= clock::duration::zero()) {
      notifier::cancel_wait(board_.driver_slot());
      continue;
    }
    notifier::commit_wait(board_.driver_slot(), std::chrono::duration_cast<std::chrono::nanoseconds>(left) +
                                            std::chrono::nanoseconds(1));
  }
}

policy_driver::policy_driver(runtime_config& cfg, pool_table& pools, const std::vector<std::unique_ptr<worker>>& workers,
                             event_board& board, unsigned standbys, std::atomic<bool>& stopping)
    : cfg_(cfg),
      pools_(pools),
      workers_(workers),
      board_(board),
      stopping_(stopping),
      standbys_(policy_mutex_, pools, workers, cfg.workers, standbys,
                std::chrono::duration_cast<std::chrono::nanoseconds>(cfg.preemption.threshold), board),
      view_(policy_mutex_, pools, workers, cfg.levels) {
  applied_.assign(cfg_.workers, pool_set::one(0));  // every core's word starts at pool 0 (worker_view::assigned)
  to_wake_.assign(cfg_.workers, false);
}

policy_driver::~policy_driver() = default;

void policy_driver::start_clock(const std::string& allotment_trace) {
  started_ = std::chrono::steady_clock::now();
  if (allotment_trace.empty()) return;
  trace_.open(allotment_trace, std::ios::trunc);
  if (!trace_) throw std::invalid_argument("promptly: cannot open allotment_trace file '" + allotment_trace + "'");
  trace_ << "t_s,policy,pool,desire,allotted,utilization,ready\n";
}

void policy_driver::start_trace(std::size_t kept) {
  policy_trace_ = trace_ring(kept);
  tracing_ = true;
}

void policy_driver::start() {
  driver_ = std::thread([this] { driver_main(); });
  // Named for top -H, perf and /proc (at most 15 characters).
  pthread_setname_np(driver_.native_handle(), "promptly-policy");
}

void policy_driver::stop() {
  {
    std::lock_guard lock(policy_mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
  }
  board_.poke_driver();
  if (driver_.joinable()) driver_.join();
}

// Preemption's watch (preemption.hpp): the pools waiting behind strands are
// decided like any event, and the policy's preempt() answers send standbys
// (decide_once_locked).
std::uint64_t policy_driver::watch_preemption_locked(std::uint64_t now) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::uint64_t next = 0;
  std::vector<ext::event> waiting = standbys_.take_waiting_locked(now, usable_assignments(), next);
  if (!waiting.empty()) decide_isolating_locked(std::move(waiting));  // preempt() answers reach standbys_.send_locked
  standbys_.recall_served_locked(now, next);
  return next;
}

void policy_driver::set_policy(const std::string& name) {
  std::unique_ptr<ext::policy> p = ext::make_policy(name, cfg_.aps, cfg_.fair);
  std::lock_guard lock(policy_mutex_);
  install_policy_locked(std::move(p));
  cfg_.policy = name;
}

void policy_driver::set_policy(std::unique_ptr<ext::policy> p) {
  if (p == nullptr) throw std::invalid_argument("promptly: set_policy given a null policy");
  std::lock_guard lock(policy_mutex_);
  const std::string name(p->name());
  install_policy_locked(std::move(p));
  cfg_.policy = name;
}

void policy_driver::set_core_limit(unsigned n) {
  if (n > worker_count())
    throw std::invalid_argument("promptly: set_core_limit(" + std::to_string(n) + ") exceeds the runtime's " +
                                std::to_string(worker_count()) + " workers (0 = no limit)");
  std::lock_guard lock(policy_mutex_);
  const unsigned previous = core_limit_.load(std::memory_order_relaxed);
  if (previous == n) return;
  core_limit_.store(n, std::memory_order_relaxed);  // relaxed: readers hold policy_mutex_ (stats reads a setting)
  // The policy decides again from scratch over the new set of cores, as
  // when it was installed (docs/policies.md, "Core limit").
  try {
    decide_locked({{ext::event_kind::installed, ext::no_pool, {}}});
  } catch (...) {
    core_limit_.store(previous, std::memory_order_relaxed);
    throw;
  }
  next_quantum_.reset();
  nonempty_since_tick_.clear();
  board_.poke_driver();
}

void policy_driver::set_fairness(std::vector<long long> weights) {
  (void)ext::fair_shares(weights, level_count());  // throws before anything changes
  std::lock_guard lock(policy_mutex_);
  {
    std::lock_guard identity(pools_.mutex());
    for (unsigned l = 0; l < level_count(); ++l) pool_at(l).weight = level_weight(weights, l);
  }
  view_.read_all_again();  // weights changed without an event: the next view reads every pool
  cfg_.fair.weights = std::move(weights);  // the round stays as configured
  if (cfg_.policy == "fair") install_policy_locked(ext::make_policy("fair", cfg_.aps, cfg_.fair));
}

// The new policy places every core (an `installed` event decided from
// scratch). If it throws, the previous policy stays installed.
void policy_driver::install_policy_locked(std::unique_ptr<ext::policy> p) {
  assert(policy_mutex_.held_by_caller() && "the caller holds policy_mutex_");
  std::unique_ptr<ext::policy> previous = std::move(policy_);
  const auto previous_quantum = quantum_;
  const auto previous_busy = busy_pools_for_quanta_;
  policy_ = std::move(p);
  busy_pools_for_quanta_ = policy_->ticks_while_one_pool_is_busy() ? 1 : 2;
  quantum_ = std::chrono::microseconds{0};
  const bool previous_switch = switch_when_out_of_work_.load(std::memory_order_relaxed);
  // Relaxed: a mode the workers read at their next boundary (see switches_when_out_of_work).
  switch_when_out_of_work_.store(policy_->switches_only_when_out_of_work(), std::memory_order_relaxed);
  const bool previous_backlog = board_.modes.backlog_events.load(std::memory_order_relaxed);
  board_.modes.backlog_events.store(policy_->wants_backlog_events(), std::memory_order_relaxed);  // relaxed: see event_board.hpp
  const bool previous_strand = board_.modes.strand_events.load(std::memory_order_relaxed);
  board_.modes.strand_events.store(policy_->wants_strand_events(), std::memory_order_relaxed);
  try {
    decide_locked({{ext::event_kind::installed, ext::no_pool, {}}});
  } catch (...) {
    policy_ = std::move(previous);
    quantum_ = previous_quantum;
    busy_pools_for_quanta_ = previous_busy;
    switch_when_out_of_work_.store(previous_switch, std::memory_order_relaxed);
    board_.modes.backlog_events.store(previous_backlog, std::memory_order_relaxed);
    board_.modes.strand_events.store(previous_strand, std::memory_order_relaxed);
    throw;
  }
  next_quantum_.reset();
  nonempty_since_tick_.clear();
  policy_failure_reported_ = false;  // one line per installed policy
  board_.poke_driver();
}

std::string policy_driver::policy_name() const {
  std::lock_guard lock(policy_mutex_);
  return std::string(policy_->name());
}

}  // namespace promptly::detail
