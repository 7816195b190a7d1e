// The worker's scheduling loop and the adaptive sleep protocol of
// Taskflow's executor ("An Efficient Work-Stealing Scheduler for Task
// Dependency Graph", Algorithms 2-5), per pool, with one deliberate change
// (the bounded nap of the last thief; README.md in this folder explains it
// and restates Lemma 1 per pool), plus the moves of I-Cilk (Sec. 5): a
// worker whose assignment changed leaves its pool at a strand boundary
// (pool_moves.cpp), and workers arriving at a pool mug deques left there
// (AMCilk, Sec. 3.5) before they steal. A worker's assignment is a ranked
// set of pools (assignment.hpp): one sleep rule serves one pool, several,
// or every pool.
//
// Invariants (asserted in the Debug build)
//  * Work keeps its pool: a worker runs a task only while serving the
//    task's pool (w.pool == t->pool).
//  * Lemma 1 per domain, across moves: a domain is a pool (its thieves are
//    the waiting workers whose set holds it) or every pool (the waiting
//    workers serving every pool). A thief that stops being a thief of
//    domain D without sleeping (it found work, or the policy moved it) and
//    was D's last thief while D has active workers wakes a waiting thief of
//    D (README.md, "Lemma 1 across moves").
//  * A wait sees one set: wait_for_task counts the worker as a thief of the
//    pools of the set it accepted and leaves as soon as its assignment word
//    differs, so the explore path, the sleep condition and the counters it
//    touches all agree.
//  * A worker that accepted its assignment serves a pool of its set.
//  * A ranked set is a priority order: a worker takes work only from the
//    pools of its set up to the first with ready work (set_walk.hpp).
//    A thief that leaves queued work of a pool below that one untaken naps
//    (sentinel_nap) rather than sleeps and passes the wake-up on, so Lemma
//    1's bound (work waits at most a nap) holds for that pool too once the
//    pools above it are idle.
//  * boundary_word == accepted, plus donated_mark while the worker serves a
//    pool below the top of the set it accepted (refresh_boundary_word, at
//    each acceptance and each arrival).
//  * A task taken from a pool's injection queue stays counted there (as
//    taken, injection_queue.hpp) until the worker that took it is active in
//    the pool: the task is then in no queue and, without that count, in no
//    count either (a child a task of another pool spawned into the pool is
//    counted nowhere in it), and a remove_pool looking in that instant
//    found the pool quiescent and returned before the task ran in it.
//    Seq-cst both sides: the taker increments num_actives, then settles;
//    remove_pool reads the queue, then num_actives (pools.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "event_board.hpp"
#include "policy_driver.hpp"
#include "pool_moves.hpp"
#include "pool_table.hpp"
#include "promptly/config.hpp"
#include "promptly/detail/waiting.hpp"
#include "sleep_protocol.hpp"
#include "worker.hpp"

namespace promptly::detail {

class scheduler;

// The workers' loop: what a worker runs between tasks, how it looks for
// work and sleeps, and its moves between pools. The scheduler owns it and
// runs it on every worker fiber; it calls down into the pool table, the
// sleep protocol, the moves, the event board and the policy driver (the
// loop-top decision), and into the scheduler only to hand a task back to
// its pool (inject, when a steal raced with a move) and for the event trace.
class worker_loop {
 public:
  // The references are the scheduler's and outlive the loop.
  worker_loop(scheduler& sched, const runtime_config& cfg, const std::vector<std::unique_ptr<worker>>& workers,
              sleep_protocol& sleep, pool_table& pools, pool_moves& moves, event_board& board, policy_driver& driver,
              const std::atomic<bool>& stopping) noexcept
      : sched_(sched), cfg_(cfg), workers_(workers), sleep_(sleep), pools_(pools), moves_(moves), board_(board),
        driver_(driver), stopping_(stopping) {}
  worker_loop(const worker_loop&) = delete;
  worker_loop& operator=(const worker_loop&) = delete;

  // Algorithm 2 with Algorithm 3, on whichever fiber carries the worker;
  // returns when the scheduler stops.
  void run();
  // A donated worker at a strand boundary: does a more urgent pool of its set have ready work?
  bool more_urgent_work_in_set(worker& w) noexcept;
  // Parking failed: blocks the worker's thread until the event. While it
  // blocks the worker is not counted active, so its pool can look empty and
  // the policy can send the pool's other workers to the awaited work.
  void block_worker(worker& w, publish_fn publish, void* event);
  // Waits that blocked a worker thread (no fiber stack), for stats().
  std::uint64_t blocked_waits() const noexcept { return blocked_waits_.load(std::memory_order_relaxed); }  // relaxed: a statistic

 private:
  unsigned pool_to_serve(worker& w) noexcept;  // the loop top's pick from w's set
  void refresh_boundary_word(worker& w) noexcept;
  bool ready_work_ranked_above(const pool_set& s, std::uint32_t pool) noexcept;  // set_walk.hpp, on this runtime's pools
  task* find_work(worker& w);                   // mugging, then Algorithm 5
  task* wait_for_task(worker& w);               // Algorithm 5 over w's set
  task* explore_task(worker& w, unsigned yield_bound);  // Algorithm 4
  task* wait_never_sleeping(worker& w);         // the ABP-style baseline
  task* steal_once(worker& w);
  task* take_injected(worker& w, pool_record& p) noexcept;  // settled by the loop once active
  bool moved(const worker& w) const noexcept;
  void sleep_unassigned(worker& w);
  void become_active(worker& w) noexcept;
  void become_inactive(worker& w) noexcept;
  void set_phase(worker& w, worker_phase p) noexcept;
  // A wake-up's latency as commit_wait returns it (0 = not woken), as a
  // mechanism timing (mechanism_samples.hpp).
  static void record_wake(worker& w, std::uint64_t wake_ns) noexcept;
  void trace(worker& w, trace_kind kind, std::uint32_t pool, std::uint32_t arg = 0, std::uint32_t arg2 = 0) noexcept;

  // pool_moves.cpp: the loop's side of a move (accounts, events, wake-ups, the trace)
  void leave_pool(worker& w);
  void arrive_at_pool(worker& w, std::uint32_t target);
  void move_to_pool(worker& w, std::uint32_t target);

  scheduler& sched_;
  const runtime_config& cfg_;
  const std::vector<std::unique_ptr<worker>>& workers_;
  sleep_protocol& sleep_;
  pool_table& pools_;
  pool_moves& moves_;
  event_board& board_;
  policy_driver& driver_;
  const std::atomic<bool>& stopping_;
  std::atomic<std::uint64_t> blocked_waits_{0};  // waits that blocked a worker thread (no fiber stack)
};

}  // namespace promptly::detail
