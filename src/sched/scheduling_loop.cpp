// The worker's scheduling loop and the adaptive sleep protocol of seed 002
// (Algorithms 2-5), with one deliberate change, the bounded nap of the
// last thief; README.md in this folder explains it and restates Lemma 1.
#include <sched.h>

#include "scheduler.hpp"

namespace promptly::detail {

// Algorithm 2 (worker_loop) fused with Algorithm 3 (exploit_task). Runs on
// whichever fiber currently carries the worker; after any task the fiber
// may be on another worker, so the worker is re-read every iteration.
void scheduler::run_scheduling_loop() {
  for (;;) {
    worker& w = worker::of(*reload_current_worker());
    task* t = w.continuation;  // seed 002: the cached successor runs first
    if (t != nullptr)
      w.continuation = nullptr;
    else
      t = w.deque.pop();
    if (t == nullptr) {
      become_inactive(w);
      t = cfg_.sleep == sleep_mode::adaptive ? wait_for_task(w) : wait_never_sleeping(w);
      if (t == nullptr) return;  // shutdown
      become_active(w);
    }
    t->execute(t);
  }
}

// Algorithm 3, lines 2-3: the first active worker makes sure a thief exists.
void scheduler::become_active(worker& w) noexcept {
  if (w.active || cfg_.sleep != sleep_mode::adaptive) return;
  w.active = true;
  if (num_actives_.fetch_add(1, std::memory_order_seq_cst) == 0 && num_thieves_.load(std::memory_order_seq_cst) == 0)
    notifier_.notify_one();
}

// Algorithm 3, line 13.
void scheduler::become_inactive(worker& w) noexcept {
  if (!w.active) return;
  w.active = false;
  num_actives_.fetch_sub(1, std::memory_order_seq_cst);
}

// Algorithm 4: random stealing; the thief's own index stands for the
// injection queue. After steal_bound failures it yields before each
// attempt, and gives up after yield_bound yields.
task* scheduler::explore_task(worker& w) {
  const unsigned n = worker_count();
  unsigned failed = 0;
  unsigned yields = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    const unsigned victim = w.next_random(n);
    task* t = victim == w.index ? injection_.pop() : workers_[victim]->deque.steal();
    if (t != nullptr) return t;
    if (++failed >= cfg_.steal_bound) {
      sched_yield();
      if (++yields >= cfg_.yield_bound) break;
    }
  }
  return nullptr;
}

// Algorithm 5. Returns a task, or nullptr when the scheduler stops.
task* scheduler::wait_for_task(worker& w) {
  for (;;) {
    num_thieves_.fetch_add(1, std::memory_order_seq_cst);  // line 2
    for (;;) {
      if (task* t = explore_task(w)) {  // lines 4-8
        if (num_thieves_.fetch_sub(1, std::memory_order_seq_cst) == 1) notifier_.notify_one();
        return t;
      }
      w.notifier_key = notifier_.prepare_wait();  // line 10
      if (!injection_.empty()) {                  // line 11: condition #1
        notifier_.cancel_wait();
        if (task* t = injection_.pop()) {
          if (num_thieves_.fetch_sub(1, std::memory_order_seq_cst) == 1) notifier_.notify_one();
          return t;
        }
        continue;  // line 20: explore again
      }
      break;
    }
    if (stopping_.load(std::memory_order_seq_cst)) {  // line 23: condition #2
      notifier_.cancel_wait();
      notifier_.notify_all();
      num_thieves_.fetch_sub(1, std::memory_order_seq_cst);
      return nullptr;
    }
    // Line 29: condition #3. The last thief must not leave active workers
    // without a thief. The paper re-explores at once; we nap on the
    // notifier for at most sentinel_nap, so a low-parallelism program does
    // not burn a second core (README.md, "Lemma 1 with a bounded nap").
    if (num_thieves_.fetch_sub(1, std::memory_order_seq_cst) == 1 && num_actives_.load(std::memory_order_seq_cst) > 0) {
      notifier_.commit_wait(w.notifier_key, cfg_.sentinel_nap);
      continue;
    }
    notifier_.commit_wait(w.notifier_key);  // line 33
  }
}

// The ABP-style baseline (seed 002 Sec. III): never sleep, yield after every
// failed steal.
task* scheduler::wait_never_sleeping(worker& w) {
  const unsigned n = worker_count();
  while (!stopping_.load(std::memory_order_relaxed)) {
    const unsigned victim = w.next_random(n);
    task* t = victim == w.index ? injection_.pop() : workers_[victim]->deque.steal();
    if (t != nullptr) return t;
    sched_yield();
  }
  return nullptr;
}

}  // namespace promptly::detail
