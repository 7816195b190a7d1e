// A job's life after admission: its pool is created and its root task
// submitted (start), the root runs the program (run_root), and the reaper
// thread removes the pool and makes the job terminal (reap) — AMCilk
// Sec. 3.3, "starting a job" and "removing a job".
//
// Why a reaper thread: runtime::remove_pool must not be called from a task
// of the pool it removes (it would wait for itself: logic_error), and it
// waits until every task of the pool has finished, detached asyncs the
// program left behind included. Doing that wait on a worker of another pool
// would take a core from the jobs; on the submitting thread it would make
// submit() block. One server thread that only ends jobs keeps every worker
// on job work, serialises the pool lifecycle (create on start, remove on
// end) with the admission of the next queued job, and is also where
// on_terminal callbacks run ("the thread that finished the job").
//
// Why the hand-off waits for the pool to drain (runtime::on_drained): a
// root task that woke the reaper as it returned gave the reaper its own
// core's next time slice (a woken thread preempts its waker) while its
// worker had not left the pool yet, and remove_pool then waited for that
// worker: remove took 1 us or 10 us (a futex round trip), p99 38-42 us
// under 75% load (bench/results/jobs/overheads/). Handing the record over
// when the pool is drained wakes the reaper once the worker has left, and
// remove_pool finds nothing to wait for (remove p50 0.27 us, p99 1.5 us
// under the same load: ab-drain-notice/). The root task registers the
// notice itself (its pool cannot drain while it runs); should that fail
// (out of memory), it hands the record over as it returns, as before.
//
// Invariants: server_state.hpp. The terminal state is decided under the
// server mutex by finish_locked, once per record.
#include <algorithm>
#include <cassert>
#include <exception>
#include <thread>

#include "server_state.hpp"

namespace promptly::server {

using detail::job_record;

namespace {

double us_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::int64_t to_ns(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

job_server::state::state(promptly::runtime& r, job_server_options o)
    : rt(r), opts(std::move(o)), flow(opts.window), start_lat(opts.window), setup_lat(opts.window), remove_lat(opts.window),
      end_lat(opts.window) {
  reaper = std::thread([this] { reaper_loop(); });
}

void job_server::state::start(const std::shared_ptr<job_record>& r) {
  promptly::pool p;
  bool have_pool = false;
  try {
    promptly::pool_options po;
    po.rank = r->rank;  // AMCilk Sec. 4.2: the job's class decides its priority among jobs
    po.elastic = r->elastic;
    p = rt.create_pool(po);
    have_pool = true;
    sizes.board()->set(p.id, r->size.expected_s);
    // Release: the reaper and stats readers that load the id see the pool made.
    r->context.pool.store(p.id, std::memory_order_release);
    // Written before the submit, which orders it before the root task and so before the reaper's read.
    r->setup_us = us_between(r->start_decision, clock_type::now());
    // The root task holds the record until it hands it to the reaper; the
    // future is dropped (the reaper's remove_pool is what waits for the job).
    (void)rt.submit(p, [this, rec = r]() mutable { run_root(std::move(rec)); });
    return;
  } catch (const std::exception& e) {
    r->error = std::string("could not start the job: ") + e.what();
  } catch (...) {
    r->error = "could not start the job: unknown exception";
  }
  // The pool exists but holds no task (submit threw before admitting it), or
  // no pool was made: the job fails alone, its slot is given to the next one.
  if (have_pool) {
    try {
      rt.remove_pool(p);
    } catch (...) {
      // Already gone with the runtime's shutdown: nothing left to free.
    }
  }
  r->context.pool.store(detail::no_pool_id, std::memory_order_release);  // release: as above
  r->outcome = detail::root_outcome::failed;
  r->finished = clock_type::now();
  std::vector<std::shared_ptr<job_record>> next;
  detail::delivery d;
  {
    std::lock_guard lock(mu);
    --running;
    d = finish_locked(*r, r->context.cancel_requested.load(std::memory_order_relaxed)  // relaxed: written under mu, held
                              ? job_state::cancelled
                              : job_state::failed,
                      r->finished);
    next = admit_queued_locked(r->finished);
    publish_counts_locked();
  }
  d.run();
  start_all(next);
}

void job_server::state::run_root(std::shared_ptr<job_record> self) noexcept {
  job_record& r = *self;
  const auto t0 = clock_type::now();
  r.started_ns.store(to_ns(t0), std::memory_order_relaxed);  // relaxed: a timestamp, read alone
  r.start_us = us_between(r.start_decision, t0);
  bool handed_over_on_drain = false;
  try {
    // Acquire: pairs with start()'s release store of the id.
    const promptly::pool own(r.context.pool.load(std::memory_order_acquire));
    // The notice hands its reference over (moves it): the runtime destroys
    // the emptied notice later, on that thread, and the record's last
    // reference is never dropped there.
    rt.on_drained(own, [this, rec = self]() mutable noexcept { hand_to_reaper(std::move(rec)); });
    handed_over_on_drain = true;
  } catch (...) {
    // bad_alloc: hand the record over below, as the program returns.
  }
  // Acquire: pairs with cancel()'s release store (the reason is visible).
  if (!r.context.cancel_requested.load(std::memory_order_acquire)) {
    job_context ctx(&r.context);
    try {
      r.result = r.program->fn(ctx);
      r.outcome = detail::root_outcome::done;
    } catch (const job_cancelled& e) {
      r.outcome = detail::root_outcome::cancelled;
      r.error = e.what();
    } catch (const std::exception& e) {
      r.outcome = detail::root_outcome::failed;
      r.error = e.what();
    } catch (...) {
      r.outcome = detail::root_outcome::failed;
      r.error = "the program threw an exception that is not a std::exception";
    }
  } else {
    r.outcome = detail::root_outcome::cancelled;
  }
  r.finished = clock_type::now();
  if (!handed_over_on_drain) hand_to_reaper(std::move(self));
}

void job_server::state::hand_to_reaper(std::shared_ptr<job_record> r) noexcept {
  // Nothing waits for a drain notice that is running (runtime::on_drained):
  // the reaper may end the job, and the server be destroyed, before this
  // call returns. So it counts itself until its last access to *this, and
  // stop_reaper waits for the count. Relaxed: the push below, under
  // reap_mu, orders the increment before anything that ends the job.
  handoffs_running.fetch_add(1, std::memory_order_relaxed);
  try {
    std::lock_guard lock(reap_mu);
    to_reap.push_back(std::move(r));
  } catch (...) {
    // The push could not grow the list: without the reaper the job would
    // stay running for ever and drain() would hang; no way out is left.
    std::terminate();
  }
  reap_cv.notify_one();
  handoffs_running.fetch_sub(1, std::memory_order_release);  // release: our accesses come before stop_reaper's return
}

void job_server::state::reaper_loop() {
  auto last_expiry = clock_type::now();
  std::unique_lock lock(reap_mu);
  for (;;) {
    const auto now = clock_type::now();
    std::vector<std::shared_ptr<detail::timed_waiter>> due;
    while (!timers.empty() && timers.begin()->first <= now) {
      due.push_back(std::move(timers.begin()->second));
      timers.erase(timers.begin());
    }
    if (!to_reap.empty() || !due.empty()) {
      auto batch = std::move(to_reap);
      to_reap.clear();
      lock.unlock();
      for (auto& w : due) w->fire();
      for (auto& r : batch) reap(r);
      lock.lock();
      continue;
    }
    if (stopping) break;
    // Wake for the next deadline, and at least every second to expire old results.
    auto until = now + std::chrono::seconds(1);
    if (!timers.empty() && timers.begin()->first < until) until = timers.begin()->first;
    reap_cv.wait_until(lock, until);
    if (const auto t = clock_type::now(); t - last_expiry >= std::chrono::seconds(1)) {
      last_expiry = t;
      lock.unlock();
      {
        std::lock_guard g(mu);
        expire_locked(t);
      }
      lock.lock();
    }
  }
  // Stopping: no job runs any more; release every timed waiter still parked.
  auto rest = std::move(timers);
  timers.clear();
  lock.unlock();
  for (auto& [t, w] : rest) w->fire();
}

void job_server::state::reap(const std::shared_ptr<job_record>& r) {
  const std::uint32_t id = r->context.pool.load(std::memory_order_acquire);  // acquire: see start()'s store
  sizes.job_ended(rt, id, r->size);  // before the removal: the id may be reused after it
  const auto t0 = clock_type::now();
  std::string remove_error;
  try {
    rt.remove_pool(promptly::pool(id));
  } catch (const std::exception& e) {
    remove_error = e.what();
  }
  const auto t1 = clock_type::now();
  r->remove_us = us_between(t0, t1);
  r->end_us = us_between(r->finished, t1);
  std::vector<std::shared_ptr<job_record>> next;
  detail::delivery d;
  {
    std::lock_guard lock(mu);
    --running;
    job_state s = job_state::done;
    if (r->context.cancel_requested.load(std::memory_order_relaxed)) {  // relaxed: written under mu, held
      s = job_state::cancelled;
      if (r->error.empty() || r->outcome != detail::root_outcome::cancelled) r->error = r->reason;
    } else if (r->outcome == detail::root_outcome::cancelled) {
      s = job_state::cancelled;
    } else if (r->outcome == detail::root_outcome::failed) {
      s = job_state::failed;
    } else if (!remove_error.empty()) {
      // The program returned but its pool could not be removed: report it
      // rather than claim a clean end.
      s = job_state::failed;
      r->error = "the job's pool could not be removed: " + remove_error;
    }
    if (s != job_state::done) r->result = json();
    remove_lat.add(r->remove_us);
    end_lat.add(r->end_us);
    start_lat.add(r->start_us);
    setup_lat.add(r->setup_us);
    d = finish_locked(*r, s, t1);
    next = admit_queued_locked(t1);
    publish_counts_locked();
  }
  d.run();
  start_all(next);
}

detail::delivery job_server::state::finish_locked(job_record& r, job_state s, clock_type::time_point now) {
  assert(!is_terminal(r.state) && is_terminal(s));
  r.state = s;
  if (r.finished == clock_type::time_point{}) r.finished = now;
  r.terminal = now;
  assert(r.accepted <= r.finished && r.finished <= r.terminal);
  const double flow_us = us_between(r.accepted, r.terminal);  // flow time: accepted -> terminal (AMCilk Sec. 6.1)
  auto it = per_program.find(r.program->name);
  if (it == per_program.end()) it = per_program.emplace(r.program->name, detail::program_counts(opts.window)).first;
  switch (s) {
    case job_state::done:
      ++done;
      ++it->second.done;
      flow.add(flow_us);
      it->second.flow.add(flow_us);
      break;
    case job_state::failed:
      ++failed;
      ++it->second.failed;
      break;
    default:
      ++cancelled;
      ++it->second.cancelled;
      break;
  }
  expiry.emplace_back(now + opts.result_ttl, r.id);
  detail::delivery d;
  d.owner = this;
  ++deliveries;
  d.info = info_locked(r, now);
  d.task_waiters = std::move(r.task_waiters);
  d.timed_waiters = std::move(r.timed_waiters);
  d.callbacks = std::move(r.callbacks);
  r.terminal_cv.notify_all();
  return d;
}

std::vector<std::shared_ptr<job_record>> job_server::state::admit_queued_locked(clock_type::time_point now) {
  std::vector<std::shared_ptr<job_record>> out;
  while (running < opts.max_running && !queue.empty()) {
    auto r = std::move(queue.front());
    queue.pop_front();
    r->state = job_state::running;
    // `now` was read by the thread that freed the slot before it took the lock, and may be
    // older than this job's acceptance (read before the submitter took it): a decision
    // never precedes the acceptance it decides on.
    r->start_decision = std::max(now, r->accepted);
    ++running;
    out.push_back(std::move(r));
  }
  return out;
}

void job_server::state::start_all(const std::vector<std::shared_ptr<job_record>>& rs) {
  for (const auto& r : rs) start(r);
}

void job_server::state::stop_reaper() {
  {
    std::lock_guard lock(reap_mu);
    stopping = true;
  }
  reap_cv.notify_one();
  if (reaper.joinable()) reaper.join();
  // A hand-off whose job the reaper has ended may still be returning from
  // its notify (on a worker the reaper's wake-up preempted); rare, and only
  // here, so poll.
  while (handoffs_running.load(std::memory_order_acquire) != 0) std::this_thread::yield();  // acquire: pairs with the release
}

void detail::delivery::run() {
  for (auto& p : task_waiters) p.set_value();
  for (auto& w : timed_waiters) w->fire();
  for (auto& f : callbacks) {
    try {
      f(info);
    } catch (...) {
      // A callback's exception must not stop the others or the reaper; the
      // callback contract (job_server.hpp) says it must not throw.
    }
  }
  if (owner != nullptr) {
    std::lock_guard lock(owner->mu);
    --owner->deliveries;
    if (owner->idle_locked()) owner->idle_cv.notify_all();
    owner = nullptr;
  }
}

}  // namespace promptly::server
