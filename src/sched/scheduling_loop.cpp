// The worker's scheduling loop and the adaptive sleep protocol of seed 002
// (Algorithms 2-5), per priority level, with one deliberate change (the
// bounded nap of the last thief; README.md in this folder explains it and
// restates Lemma 1), plus the level moves of seed 000 Sec. 5: a worker
// whose assignment changed leaves its level at a strand boundary, handing
// a non-empty deque to the level's muggable list, and workers arriving at a
// level mug such deques (seed 001 Sec. 3.5) before they steal.
//
// Invariants (asserted in the Debug build)
//  * Work keeps its level: a worker runs a task only while serving the
//    task's level (w.level == t->level); the cached graph continuation is
//    pushed back on the level's deque when the worker leaves the level.
//  * A worker that leaves a level, for another level or for none, leaves
//    nothing behind unreachable: a non-empty deque becomes muggable and the
//    level is reported non-empty to the policy.
//  * Lemma 1 per level, across moves: a thief that stops being a thief of
//    level L without sleeping (it found work, or the policy moved it, or the
//    mode changed) and was L's last thief while L has active workers wakes
//    a waiting worker of L (README.md, "Lemma 1 across moves").
//  * A wait sees one mode: wait_for_task takes one snapshot of roaming_ and
//    leaves as soon as the live mode differs, so the explore path, the
//    sleep condition and the counters it touches all agree.
#include <sched.h>

#include <cassert>

#include "chaos.hpp"
#include "scheduler.hpp"

namespace promptly::detail {
namespace {
// Returned by find_work when the scheduler stops.
task stop_marker{nullptr};
}  // namespace

// Algorithm 2 (worker_loop) fused with Algorithm 3 (exploit_task). Runs on
// whichever fiber currently carries the worker; after any task the fiber
// may be on another worker, so the worker is re-read every iteration.
void scheduler::run_scheduling_loop() {
  for (;;) {
    worker& w = worker::of(*reload_current_worker());
    // The loop top is a strand boundary with nothing on the stack.
    const unsigned target = w.assigned.load(std::memory_order_acquire);
    if (target != w.level && !roaming_.load(std::memory_order_relaxed)) {
      become_inactive(w);
      if (target == no_level) {
        leave_level(w);  // hand over what the deque holds before sleeping
        sleep_unassigned(w);
        if (stopping_.load(std::memory_order_acquire)) return;
        continue;
      }
      move_to_level(w, target);
    }
    task* t = w.continuation;  // seed 002: the cached successor runs first
    if (t != nullptr)
      w.continuation = nullptr;
    else
      t = w.deque->pop();
    if (t == nullptr) {
      become_inactive(w);
      t = cfg_.sleep == sleep_mode::adaptive ? find_work(w) : wait_never_sleeping(w);
      if (t == &stop_marker) return;
      if (t == nullptr) continue;  // reassigned: the loop top moves the worker
      if (t->level != w.level) move_to_level(w, t->level);  // a roaming worker found work elsewhere
      become_active(w);
    }
    assert(t->level == w.level && "a worker runs only tasks of the level it serves");
    auto& tasks = w.accounts[w.level].tasks;
    tasks.store(tasks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    t->execute(t);
  }
}

// In roaming mode all workers form one sleep domain (level 0's counters).
static unsigned domain_of(const worker& w, bool roaming) noexcept { return roaming ? 0 : w.level; }

void scheduler::set_phase(worker& w, worker_phase p) noexcept {
  const std::uint64_t now = now_ns();
  const std::uint64_t since = w.phase_since_ns.load(std::memory_order_relaxed);
  level_account& a = w.accounts[w.level];
  auto& counter = w.phase.load(std::memory_order_relaxed) == worker_phase::working ? a.work_ns : a.look_ns;
  counter.store(counter.load(std::memory_order_relaxed) + (now - since), std::memory_order_relaxed);
  w.phase_since_ns.store(now, std::memory_order_relaxed);
  w.phase.store(p, std::memory_order_relaxed);
}

// Algorithm 3, lines 2-3: the first active worker of a level makes sure a
// thief of that level exists.
void scheduler::become_active(worker& w) noexcept {
  if (w.active) return;
  w.active = true;
  set_phase(w, worker_phase::working);
  const bool roaming = roaming_.load(std::memory_order_relaxed);
  const unsigned d = domain_of(w, roaming);
  w.active_domain = d;
  level_pool& p = *levels_[d];
  if (p.num_actives.fetch_add(1, std::memory_order_seq_cst) == 0 && cfg_.sleep == sleep_mode::adaptive &&
      p.num_thieves.load(std::memory_order_seq_cst) == 0)
    notify_level(d);
  // A decision that read the level between our taking the task and the
  // increment above saw it empty (nothing queued, nobody active). Seq-cst
  // after the increment: either that decision's re-check saw us, or we see
  // the belief it stored and report the level (policy_driver.cpp).
  if (!roaming && !p.believed_nonempty.load(std::memory_order_seq_cst)) note_nonempty(d);
  chaos::point();
}

// Algorithm 3, line 13.
void scheduler::become_inactive(worker& w) noexcept {
  if (!w.active) return;
  w.active = false;
  set_phase(w, worker_phase::looking);
  const int before = levels_[w.active_domain]->num_actives.fetch_sub(1, std::memory_order_seq_cst);
  assert(before > 0 && "num_actives never goes negative");
  (void)before;
}

void scheduler::block_worker(worker& w, publish_fn publish, void* event) {
  blocked_waits_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
  const bool was_active = w.active;
  become_inactive(w);
  note_maybe_empty(w.level);
  block_current_thread(publish, event);
  if (was_active) become_active(w);  // same thread, same worker: no fiber switch happened
}

void scheduler::adopt_deque(worker& w, task_deque* d) {
  task_deque* mine = w.own[w.level];
  if (mine != nullptr) levels_[w.level]->give_spare(mine);  // empty: the caller found nothing in it
  w.own[w.level] = d;
  w.deque = d;
  w.visible.store(d, std::memory_order_release);
}

// Leaves the level the worker serves, at a strand boundary with no task on
// the stack: the cached continuation goes back on the level's deque, and a
// non-empty deque becomes muggable (the worker keeps an empty one, so that
// it can come back to the level without a move). The worker still serves
// the level until arrive_at_level.
void scheduler::leave_level(worker& w) {
  set_phase(w, w.phase.load(std::memory_order_relaxed));  // close the interval at the old level
  const unsigned old = w.level;
  task_deque* d = w.own[old];
  assert(d == w.deque && "the worker's deque is its own deque of the level it serves");
  if (w.continuation != nullptr) {  // work keeps its level
    d->push(w.continuation);
    w.continuation = nullptr;
  }
  const bool left_work = !d->empty();
  if (left_work) {
    task_deque* fresh = levels_[old]->take_spare();
    if (fresh == nullptr) fresh = new_deque();
    levels_[old]->give_muggable(d);
    w.own[old] = fresh;
    w.deque = fresh;
    w.visible.store(fresh, std::memory_order_release);
  }
  chaos::point();
  if (left_work) {
    note_nonempty(old);
    notify_level(old);  // a sleeping worker of the old level can mug it
  } else {
    note_maybe_empty(old);
  }
}

void scheduler::arrive_at_level(worker& w, unsigned target) {
  w.level = target;
  w.serving.store(target, std::memory_order_release);
  if (roaming_.load(std::memory_order_relaxed)) w.assigned.store(target, std::memory_order_relaxed);
  if (w.own[target] == nullptr) {
    task_deque* fresh = levels_[target]->take_spare();
    w.own[target] = fresh != nullptr ? fresh : new_deque();
  }
  w.deque = w.own[target];
  w.visible.store(w.deque, std::memory_order_release);
  auto& sw = w.accounts[target].switches_in;
  sw.store(sw.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void scheduler::move_to_level(worker& w, unsigned target) {
  leave_level(w);
  arrive_at_level(w, target);
}

// Wakes one waiting worker that serves `level` (any worker when roaming).
void scheduler::notify_level(unsigned level) noexcept {
  notifier::fence_before_notify();
  const bool roaming = roaming_.load(std::memory_order_relaxed);
  const std::size_t n = workers_.size();
  static thread_local unsigned rotor = 0;
  const unsigned start = rotor++;
  for (std::size_t k = 0; k < n; ++k) {
    worker& v = *workers_[(start + k) % n];
    if ((roaming || v.assigned.load(std::memory_order_seq_cst) == level) && notifier::notify(v.slot)) return;
  }
}

// True when the wait that took the snapshot `roaming` must end: the mode
// changed, or the policy moved the worker.
bool scheduler::moved(const worker& w, bool roaming) const noexcept {
  if (roaming_.load(std::memory_order_seq_cst) != roaming) return true;
  return !roaming && w.assigned.load(std::memory_order_seq_cst) != w.level;
}

// One steal attempt (Algorithm 4, lines 4-9): a random victim serving the
// same level, or, when the victim is the thief itself, the level's
// injection queue and muggable deques. Roaming workers take from any level.
task* scheduler::steal_once(worker& w, bool roaming) {
  const unsigned n = worker_count();
  const unsigned v = w.next_random(n);
  const unsigned levels = level_count();
  if (roaming) {
    if (v != w.index) return workers_[v]->visible.load(std::memory_order_acquire)->steal();
    const unsigned start = w.next_random(levels);
    for (unsigned k = 0; k < levels; ++k) {
      level_pool& p = *levels_[(start + k) % levels];
      if (task* t = p.injection.pop()) return t;
      if (task* t = p.steal_muggable()) return t;
    }
    return nullptr;
  }
  level_pool& p = *levels_[w.level];
  if (v == w.index) {
    if (task* t = p.injection.pop()) return t;
    return p.steal_muggable();
  }
  worker& victim = *workers_[v];
  if (victim.serving.load(std::memory_order_acquire) != w.level) return nullptr;  // never probe other levels' deques
  task* t = victim.visible.load(std::memory_order_acquire)->steal();
  if (t != nullptr && t->level != w.level) {
    inject(t);  // the victim moved between our two reads: hand the task to its level
    return nullptr;
  }
  return t;
}

// Algorithm 4: random stealing. After steal_bound failures the thief yields
// before each attempt, and gives up after yield_bound yields.
task* scheduler::explore_task(worker& w, bool roaming) {
  unsigned failed = 0;
  unsigned yields = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (moved(w, roaming)) return nullptr;
    if (task* t = steal_once(w, roaming)) return t;
    if (++failed >= cfg_.steal_bound) {
      sched_yield();
      if (++yields >= cfg_.yield_bound) break;
    }
  }
  return nullptr;
}

// Mugging first (seed 001 Sec. 3.5): a deque left with work at this level
// is taken whole, then Algorithm 5.
task* scheduler::find_work(worker& w) {
  if (!roaming_.load(std::memory_order_relaxed)) {
    while (task_deque* m = levels_[w.level]->take_muggable()) {
      adopt_deque(w, m);
      if (task* t = m->pop()) return t;
    }
  }
  return wait_for_task(w);
}

// Algorithm 5 at the worker's level. Returns a task, nullptr when the
// policy moved the worker or the mode changed, or &stop_marker when the
// scheduler stops.
task* scheduler::wait_for_task(worker& w) {
  const bool roaming = roaming_.load(std::memory_order_seq_cst);
  const unsigned d = domain_of(w, roaming);
  level_pool& p = *levels_[d];
  auto queued = [&] {
    if (!roaming) return p.has_queued_work();
    for (auto& l : levels_)
      if (l->has_queued_work()) return true;
    return false;
  };
  // Stops being a thief without sleeping (lines 16-17). Lemma 1 per level:
  // the last thief of a level with active workers hands the role on, both
  // when it found work (the paper) and when it leaves the level (a move).
  auto stop_thieving = [&](bool found) {
    const int before = p.num_thieves.fetch_sub(1, std::memory_order_seq_cst);
    assert(before > 0 && "num_thieves never goes negative");
    if (before == 1 && (found || p.num_actives.load(std::memory_order_seq_cst) > 0))
      notify_level(d);
    else if (!found && p.has_queued_work())
      notify_level(d);  // a wake-up aimed at us may have been for that work
  };
  for (;;) {
    p.num_thieves.fetch_add(1, std::memory_order_seq_cst);  // line 2
    chaos::point();
    task* found = nullptr;
    for (;;) {
      found = explore_task(w, roaming);  // lines 4-8
      if (found != nullptr || moved(w, roaming)) break;
      notifier::prepare_wait(w.slot);  // line 10
      chaos::point();
      if (queued()) {                  // line 11: condition #1
        notifier::cancel_wait(w.slot);
        found = steal_once(w, roaming);
        if (found != nullptr) break;
        continue;  // line 20: explore again
      }
      break;
    }
    if (found != nullptr || moved(w, roaming)) {
      notifier::cancel_wait(w.slot);
      stop_thieving(found != nullptr);
      return found;
    }
    if (stopping_.load(std::memory_order_seq_cst)) {  // line 23: condition #2
      notifier::cancel_wait(w.slot);
      p.num_thieves.fetch_sub(1, std::memory_order_seq_cst);
      return &stop_marker;
    }
    // Line 29: condition #3. The last thief must not leave active workers
    // of its level without a thief. The paper re-explores at once; we nap
    // for at most sentinel_nap (README.md, "Lemma 1 with a bounded nap").
    if (p.num_thieves.fetch_sub(1, std::memory_order_seq_cst) == 1 && p.num_actives.load(std::memory_order_seq_cst) > 0) {
      chaos::point();
      notifier::commit_wait(w.slot, cfg_.sentinel_nap);
      continue;
    }
    // Nobody works at this level any more: it may have become empty, which
    // the policy hears about (it may move this worker).
    if (!roaming) note_maybe_empty(d);
    chaos::point();
    if (moved(w, roaming)) {
      notifier::cancel_wait(w.slot);
      return nullptr;
    }
    notifier::commit_wait(w.slot);  // line 33
  }
}

// The ABP-style baseline (seed 002 Sec. III): never sleep, yield after every
// failed steal.
task* scheduler::wait_never_sleeping(worker& w) {
  const bool roaming = roaming_.load(std::memory_order_seq_cst);
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (moved(w, roaming)) return nullptr;
    if (task* t = steal_once(w, roaming)) return t;
    sched_yield();
  }
  return &stop_marker;
}

// A worker the policy gave to no level sleeps until it gets one.
void scheduler::sleep_unassigned(worker& w) {
  for (;;) {
    if (stopping_.load(std::memory_order_acquire) || w.assigned.load(std::memory_order_seq_cst) != no_level) return;
    notifier::prepare_wait(w.slot);
    chaos::point();
    if (stopping_.load(std::memory_order_seq_cst) || w.assigned.load(std::memory_order_seq_cst) != no_level) {
      notifier::cancel_wait(w.slot);
      return;
    }
    notifier::commit_wait(w.slot);
  }
}

}  // namespace promptly::detail
