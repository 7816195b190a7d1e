// The job server's shared state: the job table, the FIFO of queued jobs,
// the counters and windows behind stats(), and the reaper thread that ends
// jobs. Internal to src/server/jobs.
//
// Invariants (all under `mu` unless marked otherwise)
//  * Every id in [1, next_id) was accepted and is in `jobs` until its
//    result expires (result_ttl after it became terminal); an id in neither
//    is unknown_job.
//  * A record's state moves queued -> running -> terminal or queued ->
//    terminal, each step under `mu`, so exactly one terminal transition
//    happens per id (finish_locked asserts it).
//  * `queue` holds exactly the records in state queued, oldest first;
//    running == the number of records in state running (root task not yet
//    reaped) <= max_running.
//  * A running record owns one pool from the moment its pool is created
//    until the reaper's remove_pool returned; the pool is removed by the
//    reaper thread only, never by a task of that pool (remove_pool would
//    throw logic_error; it also waits for the pool's detached work, which
//    must not hold a worker).
//  * cancel_requested is only set under `mu` while the record is not
//    terminal; the reaper decides the terminal state under `mu`, so
//    cancel() returns true exactly for the jobs that end cancelled. The
//    job's stop token is requested after cancel_requested was set, outside
//    `mu` (its callbacks wake the job's parked waits), so a program that
//    sees the token requested sees cancelled() too.
//  * deliveries counts finish_locked's results whose run() has not ended;
//    idle (drain's condition) = nothing running, queued or being delivered.
//  * Fields the root task writes (outcome, result, error, finished) are
//    read by others only after the record passed through the reap queue
//    (reap_mu orders them) and, by status readers, only once terminal. The
//    hand-off to the reap queue happens after the root task returned: on
//    the pool's drain (runtime::on_drained, ordered after the root's end by
//    the pool's seq-cst counts), or by the root itself as it returns.
//  * handoffs_running counts hand_to_reaper calls that have not returned;
//    stop_reaper waits for 0 after joining the reaper, since the runtime
//    does not wait for a running drain notice and the reaper may end a job
//    (and the server be destroyed) while its hand-off is still returning.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "promptly/promise.hpp"
#include "promptly/runtime.hpp"
#include "promptly/server/job_server.hpp"
#include "sample_window.hpp"
#include "size_estimator.hpp"

namespace promptly::server {

using clock_type = std::chrono::steady_clock;

namespace detail {

struct program_entry {
  std::string name;
  program_fn fn;
  arg_schema schema;
  std::string help;
};

// A waiter with a deadline (wait_for from a task): fired once, either by
// the job's end or by the reaper when the deadline passes.
struct timed_waiter {
  promptly::promise<void> done;
  std::atomic<bool> fired{false};
  clock_type::time_point deadline;
  void fire() {
    // Acq_rel: exactly one of the two firers wins and sets the promise.
    if (!fired.exchange(true, std::memory_order_acq_rel)) done.set_value();
  }
};

inline constexpr std::uint32_t no_pool_id = ~std::uint32_t{0};

}  // namespace detail

struct job_context::impl {
  json args;
  job_id id = 0;
  promptly::runtime* rt = nullptr;
  // The job's pool id (detail::no_pool_id before it exists). Release on
  // store, acquire on load: a reader that sees the id sees the pool made.
  std::atomic<std::uint32_t> pool{detail::no_pool_id};
  // Set (under the server's mutex) by cancel(); read by the program at its
  // cutoffs. Release/acquire: a program that sees it sees the reason.
  std::atomic<bool> cancel_requested{false};
  // Requested after cancel_requested is set (outside the mutex): wakes the
  // job's cancellable waits and io:: operations (job_context::stop_token).
  std::stop_source stop;
};

namespace detail {

enum class root_outcome : std::uint8_t { none, done, failed, cancelled };

// One job; made with make_shared (record and count in one block).
struct job_record {
  job_context::impl context;  // args, id, pool, cancel flag: what the program sees
  job_id id = 0;
  std::shared_ptr<const program_entry> program;
  std::string job_class;
  std::optional<promptly::elastic_params> elastic;  // submit_options::elastic, for the job's pool
  unsigned rank = 0;
  size_estimate size;  // the expected work the serpt policy sees, and where it came from
  job_state state = job_state::queued;
  std::string reason;              // why it was cancelled (set with cancel_requested)
  // Written by the root task before the hand-off to the reaper.
  root_outcome outcome = root_outcome::none;
  json result;
  std::string error;
  // accepted: submit() began; finished: the root returned (or the job was
  // ended before it ran); terminal: finish_locked. accepted <= finished <= terminal.
  clock_type::time_point accepted, start_decision, finished, terminal;
  // Root task start, ns since the clock's epoch; 0 = not started. Atomic:
  // status readers of a running job read it while the root task writes it.
  std::atomic<std::int64_t> started_ns{0};
  double start_us = 0, setup_us = 0, remove_us = 0, end_us = 0;
  std::condition_variable terminal_cv;                     // plain-thread waiters
  std::vector<promptly::promise<void>> task_waiters;       // task waiters (parked)
  std::vector<std::shared_ptr<timed_waiter>> timed_waiters;
  std::vector<std::function<void(const job_info&)>> callbacks;
};

}  // namespace detail

namespace detail {

// What finish_locked collected to deliver outside the mutex.
struct delivery {
  job_server::state* owner = nullptr;  // counts the delivery in flight until run() ends
  job_info info;
  std::vector<promptly::promise<void>> task_waiters;
  std::vector<std::shared_ptr<timed_waiter>> timed_waiters;
  std::vector<std::function<void(const job_info&)>> callbacks;

  delivery() = default;
  delivery(delivery&& o) noexcept { *this = std::move(o); }
  delivery& operator=(delivery&& o) noexcept {
    owner = std::exchange(o.owner, nullptr);  // exactly one copy is counted
    info = std::move(o.info);
    task_waiters = std::move(o.task_waiters);
    timed_waiters = std::move(o.timed_waiters);
    callbacks = std::move(o.callbacks);
    return *this;
  }
  // A delivery never run (an exception between collecting and running it)
  // still wakes its waiters, so no waiter and no drain() hangs.
  ~delivery() {
    if (owner != nullptr) run();
  }
  // Wakes the waiters, runs the callbacks, then uncounts itself; once.
  void run();
};

struct program_counts {
  std::uint64_t done = 0, failed = 0, cancelled = 0;
  sample_window flow;
  explicit program_counts(std::size_t window) : flow(window) {}
};

}  // namespace detail

struct job_server::state {
  state(promptly::runtime& r, job_server_options o);

  promptly::runtime& rt;
  const job_server_options opts;

  mutable std::mutex programs_mu;
  std::map<std::string, std::shared_ptr<const detail::program_entry>, std::less<>> programs;

  mutable std::mutex mu;
  std::unordered_map<job_id, std::shared_ptr<detail::job_record>> jobs;
  std::deque<std::shared_ptr<detail::job_record>> queue;
  std::deque<std::pair<clock_type::time_point, job_id>> expiry;  // terminal order = expiry order
  std::size_t running = 0;
  job_id next_id = 1;
  bool draining = false;
  unsigned core_limit = 0;
  std::uint64_t submitted = 0, rejected = 0, done = 0, failed = 0, cancelled = 0;
  detail::sample_window flow, start_lat, setup_lat, remove_lat, end_lat;
  std::map<std::string, detail::program_counts, std::less<>> per_program;
  detail::size_estimator sizes;  // its own lock
  // Deliveries (waiters, callbacks) collected by finish_locked and not yet
  // run: drain() and the destructor wait for them too, so every callback
  // has run when they return (promptlyd replies to waiting clients from them).
  std::size_t deliveries = 0;
  std::condition_variable idle_cv;  // running + queued + deliveries reached 0
  bool idle_locked() const noexcept { return running == 0 && queue.empty() && deliveries == 0; }
  // Mirrors of running / queued / draining for the lock-free ready() and
  // accepting(); written under mu, read relaxed (a snapshot is all they promise).
  std::atomic<std::size_t> running_mirror{0}, queued_mirror{0};
  std::atomic<bool> draining_mirror{false};

  // The reaper: ends jobs whose root task returned, fires timed waiters.
  std::mutex reap_mu;
  std::condition_variable reap_cv;
  std::vector<std::shared_ptr<detail::job_record>> to_reap;
  std::atomic<unsigned> handoffs_running{0};  // hand_to_reaper calls not yet returned (stop_reaper waits)
  std::multimap<clock_type::time_point, std::shared_ptr<detail::timed_waiter>> timers;
  bool stopping = false;
  std::thread reaper;

  // --- lifecycle (lifecycle.cpp) ---
  void start(const std::shared_ptr<detail::job_record>& r);
  void run_root(std::shared_ptr<detail::job_record> r) noexcept;
  // Queues r for the reaper and wakes it (from the drain notice or the root task).
  void hand_to_reaper(std::shared_ptr<detail::job_record> r) noexcept;
  void reaper_loop();
  void reap(const std::shared_ptr<detail::job_record>& r);
  void stop_reaper();
  // Makes r terminal in state s (under mu) and collects what to deliver.
  detail::delivery finish_locked(detail::job_record& r, job_state s, clock_type::time_point now);
  // Pops queued jobs into free running slots (under mu); the caller starts them.
  std::vector<std::shared_ptr<detail::job_record>> admit_queued_locked(clock_type::time_point now);
  void start_all(const std::vector<std::shared_ptr<detail::job_record>>& rs);

  // --- cancellation and draining (job_server.cpp) ---
  // Requests r's stop token; never under mu.
  void request_stop(detail::job_record& r) noexcept;
  // drain(timeout) without a grace; drain_within(timeout, grace) with one.
  job_server::drain_report drain(std::chrono::milliseconds timeout, std::optional<std::chrono::milliseconds> cancel_grace);

  // --- admission (job_server.cpp) ---
  // The registered program of that name, or error{unknown_program}.
  std::shared_ptr<const detail::program_entry> program_named(std::string_view name) const;
  // The pool rank of a job class ("" = opts.default_rank), or error{bad_args} naming the classes.
  unsigned rank_of(const std::string& job_class) const;
  // Gives r its id and a running slot (true: the caller starts it) or a
  // place in the queue (false), or throws error{rejected} (draining, queue full).
  bool admit(const std::shared_ptr<detail::job_record>& r, clock_type::time_point t0);

  // --- table (job_server.cpp) ---
  std::shared_ptr<detail::job_record> find_locked(job_id id, clock_type::time_point now);
  void expire_locked(clock_type::time_point now);
  job_info info_locked(const detail::job_record& r, clock_type::time_point now) const;
  void publish_counts_locked();
};

}  // namespace promptly::server
