// The workers' loop (scheduling_loop.hpp states the invariants).
#include <sched.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <span>

#include "chaos.hpp"
#include "external_poll.hpp"
#include "scheduler.hpp"
#include "scheduling_loop.hpp"
#include "set_walk.hpp"

namespace promptly::detail {
namespace {
// Returned by find_work when the scheduler stops.
task stop_marker{nullptr};
// A yield that returns later than this lost the CPU to a thread that keeps
// it: far above a wake-up here (p50 14-20 us, p99 35-222 us in
// bench/results/jobs/), below a time slice (the 4 ms tick a spinning
// process got on this 2-core VM, perf sched timehist).
constexpr std::uint64_t costly_yield_ns = 1'000'000;
}  // namespace

// Algorithm 2 (worker_loop) fused with Algorithm 3 (exploit_task). Runs on
// whichever fiber currently carries the worker; after any task the fiber
// may be on another worker, so the worker is re-read every iteration.
void worker_loop::run() {
  for (;;) {
    worker& w = worker::of(*reload_current_worker());
    // The loop top is a strand boundary with nothing on the stack: the one
    // place besides the policy thread where a decision may run (a pool became
    // non-empty and the policy thread has not decided yet: a busy worker
    // decides now rather than wait for that thread to get a core).
    // Acquire: pairs with the release that set decide_request, so the
    // event bits it announces are visible below.
    // A request may also only ask it to re-walk its set (apply_locked): it
    // decides when some event is posted.
    bool asked = false;
    if (unsigned word = w.assigned.load(std::memory_order_acquire); word != no_pool && (word & decide_request)) [[unlikely]] {
      w.assigned.compare_exchange_strong(word, word & ~decide_request, std::memory_order_relaxed);  // a new assignment clears it anyway
      asked = true;
    }
    if (board_.nonempty_posted() || w.decide_pending || (asked && board_.events_posted())) [[unlikely]] {
      w.decide_pending = false;
      driver_.decide_at_loop_top(w.continuation == nullptr && w.deque->empty());
    }
    const unsigned target = pool_to_serve(w);
    if (target == w.pool) {
      w.accepted = w.set_word;
      refresh_boundary_word(w);
    } else if (!driver_.switches_when_out_of_work() || target == no_pool || (w.continuation == nullptr && w.deque->empty())) {
      // Under a steal-boundary policy a core leaves for another pool only
      // once out of local work; a core given no pool stops now, handing its
      // deque over (parking.cpp, switch_pool_at_boundary).
      become_inactive(w);
      w.accepted = w.set_word;
      refresh_boundary_word(w);
      if (target == no_pool) {
        leave_pool(w);  // hand over what the deque holds before sleeping
        sleep_unassigned(w);
        if (stopping_.load(std::memory_order_acquire)) return;
        continue;
      }
      move_to_pool(w, target);
      if (const std::uint64_t asked = w.reassigned_ns.exchange(0, std::memory_order_relaxed); asked != 0)  // relaxed: a statistic
        w.samples.record(mechanism_op::realloc, elapsed_since(asked));
    }
    task* t = w.continuation;  // Taskflow: the cached successor runs first
    if (t != nullptr)
      w.continuation = nullptr;
    else
      t = w.deque->pop();
    if (t == nullptr) {
      become_inactive(w);
      t = cfg_.sleep == sleep_mode::adaptive ? find_work(w) : wait_never_sleeping(w);
      if (t == &stop_marker) return;
      if (t == nullptr) continue;  // reassigned: the loop top moves the worker
      chaos::point();  // taken, and not yet active in its pool: remove_pool may look now
      if (t->pool != w.pool) move_to_pool(w, t->pool);  // found at another pool of its set
      become_active(w);
      if (w.standby) [[unlikely]]
        standby_dispatch::note_started(w);
      if (w.taken_from != nullptr) {
        assert(w.active && w.taken_from == w.at && "a taken task is settled once its worker is active in its pool");
        w.taken_from->injection.settle_taken();
        w.taken_from = nullptr;
      }
    }
    assert(t->pool == w.pool && w.at == &pools_.at(w.pool) && "a worker runs only tasks of the pool it serves");
    assert((w.accepted != w.set_word || w.set.contains(w.pool)) && "a worker serves a pool of the set it accepted");
    assert((w.boundary_word & ~donated_mark) == w.accepted && "the boundary word is the accepted word, marked or not");
    w.at->tasks.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
    if (sched_.tracing()) [[unlikely]] {
      const std::uint64_t now = now_ns();
      // A task pushed by a running task (push_local), started as a task of
      // its own: its spawn, stamped when it starts (the push is not timed:
      // that would cost a clock read per spawn, docs/tracing.md).
      if (t->trace_parent != 0) w.trace.record(trace_kind::spawn, now, t->pool, t->trace_parent, trace_id(t));
      w.trace.record(trace_kind::task_start, now, t->pool, trace_id(w.current), trace_id(t));
    }
    t->execute(t);
    // The task may have parked and ended on another worker, and this frame
    // may be an idle fiber's coming back: trace the fiber it returned on
    // (the reload only when tracing: it is not free, and this runs per task).
    if (sched_.tracing()) [[unlikely]] {
      worker& ended = worker::of(*reload_current_worker());
      trace(ended, trace_kind::task_end, ended.pool, trace_id(ended.current));
    }
  }
}

// The pool the worker should serve now (set_walk.hpp), reading its
// assignment again if the word changed.
unsigned worker_loop::pool_to_serve(worker& w) noexcept {
  unsigned word = assignment_of(w.assigned.load(std::memory_order_acquire));  // acquire: the published set (assignment.hpp)
  if (word != w.set_word) [[unlikely]] {
    w.set = read_assignment(w, word);
    w.set_word = word;
  }
  return set_walk::pool_to_serve(w.set, w.pool, pools_.ready_in_pool());
}

// The donated mark (worker_view.hpp): set while the worker serves a pool
// below the top of the ranked set it accepted.
void worker_loop::refresh_boundary_word(worker& w) noexcept {
  const pool_set& s = w.set;
  const bool donated = w.accepted == w.set_word && s.what == pool_set::kind::pools && s.count > 1 && w.pool != s.ids[0];
  w.boundary_word = w.accepted | (donated ? donated_mark : 0u);
}

bool worker_loop::ready_work_ranked_above(const pool_set& s, std::uint32_t pool) noexcept {
  return set_walk::ready_work_ranked_above(s, pool, pools_.ready_in_pool());
}

// A donated worker at a strand boundary: does a pool of its set ranked
// above the one it serves have ready work now? (The fairly prompt
// processor tries its primary at every iteration of its loop, Fig. 2 line
// 28.) Every fourth boundary only: a fine-grained computation crosses one
// every few nanoseconds, and the walk reads other cores' cache lines.
bool worker_loop::more_urgent_work_in_set(worker& w) noexcept {
  constexpr unsigned boundaries_per_walk = 4;
  if (++w.boundaries_since_walk < boundaries_per_walk) return false;
  w.boundaries_since_walk = 0;
  return ready_work_ranked_above(w.set, w.pool);
}

void worker_loop::trace(worker& w, trace_kind kind, std::uint32_t pool, std::uint32_t arg, std::uint32_t arg2) noexcept {
  sched_.trace(w, kind, pool, arg, arg2);
}

void worker_loop::record_wake(worker& w, std::uint64_t wake_ns) noexcept {
  if (wake_ns != 0) w.samples.record(mechanism_op::wake, wake_ns);
}

void worker_loop::set_phase(worker& w, worker_phase p) noexcept {
  const std::uint64_t now = now_ns();
  const std::uint64_t since = w.phase_since_ns.load(std::memory_order_relaxed);
  const bool working = w.phase.load(std::memory_order_relaxed) == worker_phase::working;
  // Relaxed: statistics. The pool's accounts are shared by its workers (an
  // add per phase change, not per task); the core's are the worker's own.
  (working ? w.at->work_ns : w.at->look_ns).fetch_add(now - since, std::memory_order_relaxed);
  auto& mine = working ? w.work_ns : w.look_ns;
  mine.store(mine.load(std::memory_order_relaxed) + (now - since), std::memory_order_relaxed);
  w.phase_since_ns.store(now, std::memory_order_relaxed);
  w.phase.store(p, std::memory_order_relaxed);
}

// Algorithm 3, lines 2-3: the first active worker of a domain makes sure a
// thief of that domain exists. A worker counts in the pool it serves and,
// if it serves every pool, in the every-pool domain too.
void worker_loop::become_active(worker& w) noexcept {
  if (w.active) return;
  w.active = true;
  set_phase(w, worker_phase::working);
  const bool adaptive = cfg_.sleep == sleep_mode::adaptive;
  pool_record& p = *w.at;
  w.active_domain = &p;
  sleep_.become_active(sleep_protocol::of(p), adaptive);
  w.active_every = w.set.every();
  if (w.active_every) sleep_.become_active(sleep_.every(), adaptive);
  // A decision that read the pool between our taking the task and the
  // increment above saw it empty (nothing queued, nobody active). Seq-cst
  // after the increment: either that decision's re-check saw us, or we see
  // the belief it stored and report the pool (policy_driver.cpp).
  if (!p.believed_nonempty.load(std::memory_order_seq_cst)) board_.note_nonempty(p.id);
  chaos::point();
}

// Algorithm 3, line 13.
void worker_loop::become_inactive(worker& w) noexcept {
  if (!w.active) return;
  w.active = false;
  set_phase(w, worker_phase::looking);
  if (sleep_.become_inactive(sleep_protocol::of(*w.active_domain)) == 1)
    pools_.wake_drain_waiter(*w.active_domain);  // a remove_pool may wait for the last one to leave
  if (w.active_every) sleep_.become_inactive(sleep_.every());
}

void worker_loop::block_worker(worker& w, publish_fn publish, void* event) {
  blocked_waits_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
  const bool was_active = w.active;
  pool_record& p = *w.at;  // same thread, same worker throughout: no fiber switch happens
  // Seq-cst, as parking (parking.cpp). Counted parked before it stops being
  // active and active again before it stops being parked: a remove_pool
  // must never see the task in neither count (pools.cpp).
  p.parked.fetch_add(1, std::memory_order_seq_cst);
  become_inactive(w);
  board_.note_maybe_empty(w.pool);
  block_current_thread(publish, event);
  if (was_active) become_active(w);
  p.parked.fetch_sub(1, std::memory_order_seq_cst);
}

// True when the wait must end: the policy changed the worker's assignment
// (or asked it to decide), or a pool became non-empty and no decision has
// been taken yet (the worker takes it at its loop top rather than wait for
// the policy thread to get a core; ending a wait early is always safe, the
// worker comes back).
bool worker_loop::moved(const worker& w) const noexcept {
  if (board_.nonempty_posted()) return true;
  return w.assigned.load(std::memory_order_seq_cst) != w.accepted;
}

// One steal attempt (Algorithm 4, lines 4-9): a random victim serving a
// pool of the thief's set, or, when the victim is the thief itself, the
// queued work of its set's pools in rank order (injection queues, then
// deques left there). A worker serving every pool takes from any.
task* worker_loop::steal_once(worker& w) {
  const pool_set& s = w.set;
  const std::uint8_t takeable = set_walk::pools_to_take_from(s, pools_.ready_in_pool());  // 0 for every pool
  const std::span<const std::uint32_t> from(s.ids.data(), takeable);
  const unsigned v = w.next_random(static_cast<unsigned>(workers_.size()));  // a standby's deque too
  if (v != w.index) {
    worker& victim = *workers_[v];
    if (!s.every() && std::find(from.begin(), from.end(), victim.serving.load(std::memory_order_acquire)) == from.end())
      return nullptr;  // never probe other pools' deques, nor those of a pool ranked below one with work
    task* t = victim.visible.load(std::memory_order_acquire)->steal();
    if (t != nullptr && !s.contains(t->pool)) {
      sched_.inject(t);  // the victim moved between our two reads: hand the task to its pool
      return nullptr;
    }
    return t;
  }
  if (s.every()) {
    // The pools the queued index marks (pool_table.hpp), removed ones too:
    // the sleep condition (queued_in) reads the same index, and a removed
    // pool's muggable list can still hold a deque thieves emptied, which
    // only a steal attempt moves to `spare`; skipping it kept `queued` true
    // with nothing to take (a livelock, at shutdown a hang). Walking the
    // index rather than every id keeps a steal's cost to the pools with
    // queued work at thousands of live pools.
    task* found = nullptr;
    pools_.for_each_queued(w.next_random(pools_.id_end()), [&](std::uint32_t id) {
      pool_record& p = pools_.at(id);
      found = take_injected(w, p);
      if (found == nullptr) found = p.steal_muggable();
      return found != nullptr;
    });
    return found;
  }
  for (const std::uint32_t id : from) {
    pool_record& p = pools_.at(id);
    if (task* t = take_injected(w, p)) return t;
    if (task* t = p.steal_muggable()) return t;
  }
  return nullptr;
}

// Takes a task from pool p's injection queue; it stays counted there as
// taken until the loop settles it (see the invariants above).
task* worker_loop::take_injected(worker& w, pool_record& p) noexcept {
  task* t = p.injection.take();
  if (t != nullptr) {
    assert(w.taken_from == nullptr && "a worker holds one taken task at a time");
    w.taken_from = &p;
  }
  return t;
}

// Algorithm 4: random stealing. After steal_bound failures the thief yields
// before each attempt, and gives up after `yield_bound` yields, or at once
// after a yield that kept it off its CPU for more than costly_yield_ns
// (README.md, "A yield that loses the CPU ends the exploration").
task* worker_loop::explore_task(worker& w, unsigned yield_bound) {
  unsigned failed = 0;
  unsigned yields = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (moved(w)) return nullptr;
    const std::uint64_t start = now_ns();
    if (task* t = steal_once(w)) {
      w.samples.record(mechanism_op::steal, elapsed_since(start));
      trace(w, trace_kind::steal, t->pool);
      return t;
    }
    if (++failed >= cfg_.steal_bound) {
      // Before giving the CPU away, poll the sources of work outside the
      // runtime (external_poll.hpp: ready connections). What it made ready
      // for this worker's pool is in its own deque; other pools' work is in
      // their injection queues, which the next steals look at.
      if (poll_external_sources()) {
        if (task* t = w.deque->pop()) return t;
        failed = 0;
        continue;
      }
      const std::uint64_t before = now_ns();
      sched_yield();
      // Another thread kept this CPU for longer than a wake-up takes: a
      // CPU-bound thread shares it (another process, say). Each further
      // yield would hand it a time slice (and, as we read Linux 6.18's
      // EEVDF, move this thread behind it), while work reaching this thief
      // cannot wake it (a notification wakes only a waiting slot). The
      // sleep protocol's wait, which a notification ends at once, is the
      // better place.
      if (++yields >= yield_bound || elapsed_since(before) > costly_yield_ns || chaos::yield_counts_as_costly()) break;
    }
  }
  return nullptr;
}

// Mugging first (AMCilk, Sec. 3.5): a deque left with work at a pool of the
// worker's set is taken whole, then Algorithm 5. A ranked set is walked
// most urgent pool first, and its queued work (a deque left there, else its
// injection queue) is taken before a less urgent pool's: random stealing
// alone would not respect the ranks.
task* worker_loop::find_work(worker& w) {
  // Reassigned (under a steal-boundary policy, or since the loop top): out
  // of local work now, so the loop top moves it; it must not mug first.
  if (w.assigned.load(std::memory_order_relaxed) != w.accepted) return nullptr;
  if (!w.set.every()) {
    const std::uint64_t start = now_ns();
    for (std::uint8_t i = 0; i < w.set.count; ++i) {
      const std::uint32_t id = w.set.ids[i];
      pool_record& p = pools_.at(id);
      if (p.muggable_count.load(std::memory_order_relaxed) != 0) {  // relaxed: a hint; take_muggable locks
        if (id != w.pool) move_to_pool(w, id);
        while (task_deque* m = w.at->take_muggable()) {
          moves_.adopt_deque(w, m);
          if (task* t = m->pop()) {
            w.samples.record(mechanism_op::mug, elapsed_since(start));
            trace(w, trace_kind::mug, w.pool);
            return t;
          }
        }
      }
      if (w.set.count > 1) {
        if (task* t = take_injected(w, p)) return t;  // the loop moves the worker to the task's pool
        // A pool with work running stops the walk: its workers' deques come
        // before a less urgent pool's work (the fairly prompt processor's
        // getWork at its primary before the highest available priority,
        // Fig. 2 lines 28-30); wait_for_task steals there.
        if (p.has_ready_work()) break;
      }
    }
  }
  return wait_for_task(w);
}

// Algorithm 5 over the worker's set: it is a thief of each pool of its set
// (of the every-pool domain if it serves every pool) and runs the paper's
// protocol on each of those counter pairs. Returns a task, nullptr when the
// policy moved the worker or asked it to decide, or &stop_marker when the
// scheduler stops.
task* worker_loop::wait_for_task(worker& w) {
  using domain = sleep_protocol::domain;
  const pool_set& s = w.set;  // fixed for the wait: a new assignment ends it (moved)
  std::array<domain, max_ranked_pools> domains;
  std::size_t count = 0;
  if (s.every())
    domains[count++] = sleep_.every();
  else
    for (std::uint8_t i = 0; i < s.count; ++i) domains[count++] = sleep_protocol::of(pools_.at(s.ids[i]));
  const std::span<domain> mine(domains.data(), count);
  // A pool of a ranked set below one with ready work is not taken from
  // (set_walk::pools_to_take_from): its queued work neither keeps the worker
  // exploring nor is left behind while it sleeps (it naps, below).
  auto takeable = [&](const domain& d) {
    if (s.every()) return true;
    const auto end = s.ids.begin() + set_walk::pools_to_take_from(s, pools_.ready_in_pool());
    return std::find(s.ids.begin(), end, d.id) != end;
  };
  auto queued_in = [&](const domain& d) {
    if (d.id != sleep_protocol::every_domain) return pools_.at(d.id).has_queued_work();
    // The queued index covers every pool with queued work (pool_table.hpp).
    return pools_.for_each_queued(0, [&](std::uint32_t id) { return pools_.at(id).has_queued_work(); });
  };
  auto queued = [&] { return std::any_of(mine.begin(), mine.end(), [&](const domain& d) { return takeable(d) && queued_in(d); }); };
  // Stops being a thief without sleeping (lines 16-17). Lemma 1 per domain:
  // the last thief of a domain with active workers hands the role on, both
  // when it found work (the paper) and when it leaves the pool (a move).
  auto stop_thieving = [&](bool found) {
    for (const domain& d : mine) {
      const int before = d.thieves->fetch_sub(1, std::memory_order_seq_cst);
      assert(before > 0 && "num_thieves never goes negative");
      if (before == 1 && (found || d.actives->load(std::memory_order_seq_cst) > 0))
        sleep_.notify_thief_of(d.id);
      else if (!found && queued_in(d))
        sleep_.notify_pool(d.id);  // a wake-up aimed at us may have been for that work
    }
  };
  // How long a thief spins (README.md, "Spinning when no worker is
  // active"): yield_bound while a worker of its domains is active, whose
  // deque can grow at any moment; idle_yield_bound when none is, since then
  // only an injection brings work, and an injection wakes a sleeper.
  // Relaxed: a hint; Lemma 1' rests on the seq_cst reads below.
  const unsigned idle_bound = cfg_.idle_yield_bound != 0 ? cfg_.idle_yield_bound : cfg_.yield_bound;
  auto yield_bound = [&] {
    if (idle_bound == cfg_.yield_bound) return idle_bound;
    const bool beside_active = std::any_of(mine.begin(), mine.end(), [](const domain& d) { return d.actives->load(std::memory_order_relaxed) > 0; });
    return beside_active ? cfg_.yield_bound : idle_bound;
  };
  // The last sleep was in the external wait and it made tasks ready: the
  // ones of this worker's pool are in its own deque, where its own steals
  // never look.
  bool own_work = false;
  for (;;) {
    for (const domain& d : mine) d.thieves->fetch_add(1, std::memory_order_seq_cst);  // line 2
    chaos::point();
    task* found = own_work ? w.deque->pop() : nullptr;
    own_work = false;
    while (found == nullptr) {
      found = explore_task(w, yield_bound());  // lines 4-8
      if (found != nullptr || moved(w)) break;
      notifier::prepare_wait(w.slot);  // line 10
      chaos::point();
      if (queued()) {                  // line 11: condition #1
        notifier::cancel_wait(w.slot);
        found = steal_once(w);
        if (found != nullptr) break;
        if (stopping_.load(std::memory_order_seq_cst)) break;  // explore gives up at once: leave by line 23
        continue;  // line 20: explore again
      }
      break;
    }
    // Line 23, condition #2, checked before a move: once stopping, no policy
    // decides any more, so an event posted late (a foreign thread's wake-up
    // during shutdown) would keep `moved` true and the worker would go
    // round its loop forever instead of stopping.
    if (found == nullptr && stopping_.load(std::memory_order_seq_cst)) {
      notifier::cancel_wait(w.slot);
      for (const domain& d : mine) d.thieves->fetch_sub(1, std::memory_order_seq_cst);
      return &stop_marker;
    }
    if (found != nullptr || moved(w)) {
      notifier::cancel_wait(w.slot);
      stop_thieving(found != nullptr);
      return found;
    }
    // Line 29: condition #3. The last thief of a domain must not leave its
    // active workers without a thief. The paper re-explores at once; we nap
    // for at most sentinel_nap (README.md, "Lemma 1 with a bounded nap").
    bool last_thief_of_busy_domain = false;
    for (const domain& d : mine)
      if (d.thieves->fetch_sub(1, std::memory_order_seq_cst) == 1 && d.actives->load(std::memory_order_seq_cst) > 0)
        last_thief_of_busy_domain = true;
    // Queued work at a pool of the set this worker does not take from now
    // (a more urgent one has work): the wake-up that came for it goes on to
    // another waiting worker of that pool, and this one only naps, so the
    // work is taken once the pools above it are idle even if nobody else
    // serves its pool.
    for (const domain& d : mine)
      if (!takeable(d) && queued_in(d)) {
        sleep_.notify_other(d.id, w);
        last_thief_of_busy_domain = true;
      }
    if (last_thief_of_busy_domain) {
      chaos::point();
      trace(w, trace_kind::sleep, w.pool, 1);  // arg 1: a bounded nap
      record_wake(w, notifier::commit_wait(w.slot, cfg_.sentinel_nap));
      trace(w, trace_kind::wake, w.pool);
      continue;
    }
    // Nobody works at the pools of its set any more: they may have become
    // empty, which the policy hears about (it may move this worker). This
    // worker is idle, so it decides itself at its loop top instead of waking
    // the policy thread, which on a machine whose cores all run workers
    // preempts one.
    bool posted = false;
    if (!s.every())
      for (std::uint8_t i = 0; i < s.count; ++i) posted = board_.note_maybe_empty(s.ids[i], event_board::decider::poster) || posted;
    if (posted) {
      notifier::cancel_wait(w.slot);
      w.decide_pending = true;
      return nullptr;
    }
    chaos::point();
    if (moved(w)) {
      notifier::cancel_wait(w.slot);
      return nullptr;
    }
    trace(w, trace_kind::sleep, w.pool);
    // Line 33. Asleep in the I/O reactor's epoll set if it is free
    // (external_poll.hpp): ready connections then wake this worker, not the
    // reactor thread.
    record_wake(w, notifier::commit_wait_polling(w.slot, own_work));
    trace(w, trace_kind::wake, w.pool);
  }
}

// The ABP-style baseline (Taskflow executor paper, Sec. III): never sleep, yield after every
// failed steal.
task* worker_loop::wait_never_sleeping(worker& w) {
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (moved(w)) return nullptr;
    if (task* t = steal_once(w)) return t;
    sched_yield();
  }
  return &stop_marker;
}

// A worker the policy gave to no pool sleeps until it gets one.
void worker_loop::sleep_unassigned(worker& w) {
  for (;;) {
    if (stopping_.load(std::memory_order_acquire) || w.assigned.load(std::memory_order_seq_cst) != no_pool) return;
    notifier::prepare_wait(w.slot);
    chaos::point();
    if (stopping_.load(std::memory_order_seq_cst) || w.assigned.load(std::memory_order_seq_cst) != no_pool) {
      notifier::cancel_wait(w.slot);
      return;
    }
    if (const std::uint64_t asked = w.reassigned_ns.exchange(0, std::memory_order_relaxed); asked != 0)  // relaxed: a statistic
      w.samples.record(mechanism_op::sleep, elapsed_since(asked));
    trace(w, trace_kind::sleep, no_pool);
    record_wake(w, notifier::commit_wait(w.slot));
    trace(w, trace_kind::wake, no_pool);
  }
}

}  // namespace promptly::detail
