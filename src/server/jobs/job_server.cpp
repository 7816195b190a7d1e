// job_server: registration, admission, the job table and the waiting /
// cancelling API (AMCilk Sec. 4.2, admission control and occupancy
// control). The job's life after admission is in lifecycle.cpp, stats in
// stats.cpp.
//
// Invariants: server_state.hpp. In short: every accepted id reaches exactly
// one terminal state (finish_locked, under mu); a submission that cannot be
// accepted throws error{rejected}, never drops silently; the table, the
// queue and the windows are bounded by max_running + max_queued + the jobs
// that ended within result_ttl.
#include <algorithm>
#include <stdexcept>

#include "promptly/detail/worker_view.hpp"
#include "periodic_state.hpp"
#include "server_state.hpp"

namespace promptly::server {

using detail::job_record;

namespace {

double us_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// On a worker of a runtime (a task): waiting must park the task, not block
// the worker's thread.
bool on_a_worker() noexcept { return promptly::detail::current_worker() != nullptr; }

}  // namespace

// ---- job_handle ----

job_info job_handle::status() const { return server_->status(id_); }
job_info job_handle::wait() const { return server_->wait_on(record_); }
bool job_handle::wait_for(std::chrono::nanoseconds d) const { return server_->wait_for_on(record_, d); }
bool job_handle::cancel() const { return server_->cancel(id_); }

// ---- the table ----

void job_server::state::expire_locked(clock_type::time_point now) {
  while (!expiry.empty() && expiry.front().first <= now) {
    jobs.erase(expiry.front().second);
    expiry.pop_front();
  }
}

std::shared_ptr<job_record> job_server::state::find_locked(job_id id, clock_type::time_point now) {
  expire_locked(now);
  auto it = jobs.find(id);
  if (it != jobs.end()) return it->second;
  if (id != 0 && id < next_id)
    throw error(error_code::unknown_job, "job " + std::to_string(id) + " ended more than " +
                                             std::to_string(opts.result_ttl.count()) + " ms ago; its result has expired");
  throw error(error_code::unknown_job, "no job with id " + std::to_string(id));
}

job_info job_server::state::info_locked(const job_record& r, clock_type::time_point now) const {
  job_info i;
  i.id = r.id;
  i.program = r.program->name;
  i.job_class = r.job_class;
  i.state = r.state;
  if (r.state == job_state::running) {
    const std::uint32_t p = r.context.pool.load(std::memory_order_acquire);  // acquire: see start()'s store
    if (p != detail::no_pool_id) i.pool = p;
    i.cancel_requested = r.context.cancel_requested.load(std::memory_order_relaxed);  // relaxed: written under mu, held
  }
  // The spans between a job's instants (job_timing): accepted <= root
  // started <= root returned <= terminal; a job that has not reached an
  // instant yet is measured up to `now`, one that never started was queued
  // all its life. The spans add up to flow_us exactly (in nanoseconds).
  const std::int64_t started_ns = r.started_ns.load(std::memory_order_relaxed);  // relaxed: a timestamp, read alone
  const clock_type::time_point started{std::chrono::nanoseconds(started_ns)};
  const bool terminal = is_terminal(r.state);
  // The root task sets started without the mutex, so it may be later than
  // a `now` read before: a live job is measured up to the later of the two.
  const clock_type::time_point end = terminal ? r.terminal : std::max(now, started);
  i.timing.flow_us = us_between(r.accepted, end);
  if (started_ns == 0) {
    i.timing.queued_us = i.timing.flow_us;
  } else {
    i.timing.queued_us = us_between(r.accepted, started);
    // The root's return (`finished`) is read only once terminal: the root
    // task writes it (a branch, not a select the compiler could load early).
    if (terminal) {
      i.timing.run_us = us_between(started, r.finished);
      i.timing.end_us = us_between(r.finished, r.terminal);
    } else {
      i.timing.run_us = us_between(started, end);  // end, not now: started may be the later
    }
  }
  if (terminal) {
    if (r.state == job_state::done) i.result = r.result;
    else i.error = r.error;
    i.timing.start_us = r.start_us;
    i.timing.setup_us = r.setup_us;
    i.timing.remove_us = r.remove_us;
  }
  return i;
}

void job_server::state::publish_counts_locked() {
  // Relaxed: ready() / accepting() promise a snapshot, nothing they order.
  running_mirror.store(running, std::memory_order_relaxed);
  queued_mirror.store(queue.size(), std::memory_order_relaxed);
  draining_mirror.store(draining, std::memory_order_relaxed);
}

// ---- job_server ----

job_server::job_server(promptly::runtime& rt, job_server_options opts) {
  if (opts.max_running == 0) throw std::invalid_argument("job_server: max_running must be at least 1");
  if (opts.window == 0) throw std::invalid_argument("job_server: window must be at least 1");
  for (const auto& [name, rank] : opts.classes)
    if (name.empty()) throw std::invalid_argument("job_server: a priority class needs a name");
  const auto ttl = opts.result_ttl;
  s_ = std::make_unique<state>(rt, std::move(opts));
  p_ = std::make_unique<periodic_state>(*this, ttl);
  if (rt.policy() == "serpt") detail::install_policy(rt, "serpt", s_->sizes);  // by name it has no size board
}

job_server::~job_server() {
  p_->stop();  // no release after this; drain then waits for every instance's callback
  drain(std::chrono::milliseconds(0));
  s_->stop_reaper();
}

void job_server::register_program(std::string name, program_fn fn, arg_schema schema, std::string help) {
  if (name.empty()) throw std::invalid_argument("job_server::register_program: empty program name");
  if (!fn) throw std::invalid_argument("job_server::register_program: program '" + name + "' has no function");
  auto entry = std::make_shared<const detail::program_entry>(
      detail::program_entry{name, std::move(fn), std::move(schema), std::move(help)});
  std::lock_guard lock(s_->programs_mu);
  if (!s_->programs.emplace(name, std::move(entry)).second)
    throw std::invalid_argument("job_server::register_program: program '" + name + "' is already registered");
}

std::vector<program_info> job_server::programs() const {
  std::lock_guard lock(s_->programs_mu);
  std::vector<program_info> out;
  for (const auto& [name, p] : s_->programs) out.push_back({name, p->help, p->schema.describe()});
  return out;
}

// ---- admission ----

std::shared_ptr<const detail::program_entry> job_server::state::program_named(std::string_view name) const {
  std::lock_guard lock(programs_mu);
  auto it = programs.find(name);
  if (it == programs.end()) {
    const std::string shown(name.substr(0, std::min<std::size_t>(name.size(), 64)));
    throw error(error_code::unknown_program, "no program named " + json(shown).dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return it->second;
}

unsigned job_server::state::rank_of(const std::string& job_class) const {
  if (job_class.empty()) return opts.default_rank;
  auto c = std::find_if(opts.classes.begin(), opts.classes.end(), [&](const auto& kv) { return kv.first == job_class; });
  if (c == opts.classes.end()) {
    std::string known;
    for (const auto& [name, r] : opts.classes) known += (known.empty() ? "" : ", ") + name;
    throw error(error_code::bad_args, "unknown job class " + json(job_class).dump(-1, ' ', false, json::error_handler_t::replace) +
                                          " (classes: " + (known.empty() ? "none" : known) + ")");
  }
  return c->second;
}

bool job_server::state::admit(const std::shared_ptr<job_record>& r, clock_type::time_point t0) {
  bool start_now = false;
  std::lock_guard lock(mu);
  expire_locked(t0);
  if (draining) {
    ++rejected;
    throw error(error_code::rejected, "draining: the server accepts no new jobs");
  }
  if (running < opts.max_running) {
    start_now = true;
    r->state = job_state::running;
    r->start_decision = t0;
    ++running;
  } else if (queue.size() < opts.max_queued) {
    queue.push_back(r);
  } else {
    ++rejected;
    throw error(error_code::rejected, "queue full (" + std::to_string(queue.size()) + " queued, " +
                                          std::to_string(running) + " running)");
  }
  r->id = next_id++;
  r->context.id = r->id;
  ++submitted;
  jobs.emplace(r->id, r);
  publish_counts_locked();
  return start_now;
}

job_handle job_server::submit(std::string_view program, const json& args, submit_options opts) {
  const auto t0 = clock_type::now();
  std::shared_ptr<const detail::program_entry> prog = s_->program_named(program);
  const unsigned rank = s_->rank_of(opts.job_class);
  if (opts.elastic) {
    try {
      promptly::validate(*opts.elastic);
    } catch (const std::invalid_argument& e) {
      throw error(error_code::bad_args, e.what());
    }
  }
  if (opts.size_hint_ms) (void)detail::size_estimator::checked_hint_ms(*opts.size_hint_ms);
  json validated;
  try {
    validated = prog->schema.validate(args);
  } catch (const error& e) {
    throw error(e.code(), prog->name + ": " + e.what());
  }

  auto r = std::make_shared<job_record>();
  r->program = std::move(prog);
  r->job_class = std::move(opts.job_class);
  r->rank = rank;
  r->elastic = opts.elastic;
  r->size = s_->sizes.estimate(r->program->name, validated, opts.size_hint_ms ? &*opts.size_hint_ms : nullptr);
  r->context.args = std::move(validated);
  r->context.rt = &s_->rt;
  r->accepted = t0;
  const bool start_now = s_->admit(r, t0);
  const job_id id = r->id;
  if (start_now) s_->start(r);
  return job_handle(this, id, std::move(r));
}

job_info job_server::status(job_id id) const {
  const auto now = clock_type::now();
  job_info i;
  std::uint32_t pool_id = detail::no_pool_id;
  {
    std::lock_guard lock(s_->mu);
    auto r = s_->find_locked(id, now);
    i = s_->info_locked(*r, now);
    if (i.state == job_state::running) pool_id = r->context.pool.load(std::memory_order_acquire);  // acquire: see start()
  }
  if (pool_id != detail::no_pool_id) {
    // One pool's entry, not runtime::stats(): a client polling the status
    // of hundreds of jobs must not take a snapshot of every pool per job
    // under the policy's lock.
    try {
      const pool_stats p = s_->rt.stats(promptly::pool(pool_id));
      i.work_s = p.work_s;
      i.look_s = p.look_s;
      i.cores = p.serving;
    } catch (const std::out_of_range&) {
      // The job ended and its pool was removed since the lock was released.
    }
  }
  return i;
}

job_info job_server::wait(job_id id) const {
  std::shared_ptr<job_record> r;
  {
    std::lock_guard lock(s_->mu);
    r = s_->find_locked(id, clock_type::now());
  }
  return wait_on(r);
}

job_info job_server::wait_on(const std::shared_ptr<job_record>& r) const {
  std::unique_lock lock(s_->mu);
  if (!is_terminal(r->state)) {
    if (on_a_worker()) {
      // A task: park on a promise the job's end fulfils (the worker runs other work meanwhile).
      promptly::promise<void> p;
      promptly::future<void> f = p.get_future();
      r->task_waiters.push_back(std::move(p));
      lock.unlock();
      f.wait();
      lock.lock();
    } else {
      r->terminal_cv.wait(lock, [&] { return is_terminal(r->state); });
    }
  }
  return s_->info_locked(*r, clock_type::now());
}

bool job_server::wait_for(job_id id, std::chrono::nanoseconds d) const {
  std::shared_ptr<job_record> r;
  {
    std::lock_guard lock(s_->mu);
    r = s_->find_locked(id, clock_type::now());
  }
  return wait_for_on(r, d);
}

bool job_server::wait_for_on(const std::shared_ptr<job_record>& r, std::chrono::nanoseconds d) const {
  const auto deadline = clock_type::now() + d;
  std::unique_lock lock(s_->mu);
  if (is_terminal(r->state)) return true;
  if (d <= std::chrono::nanoseconds::zero()) return false;
  if (on_a_worker()) {
    auto w = std::make_shared<detail::timed_waiter>();
    w->deadline = deadline;
    promptly::future<void> f = w->done.get_future();
    r->timed_waiters.push_back(w);
    lock.unlock();
    {
      std::lock_guard g(s_->reap_mu);
      s_->timers.emplace(deadline, w);
    }
    s_->reap_cv.notify_one();
    f.wait();
    lock.lock();
    return is_terminal(r->state);
  }
  return r->terminal_cv.wait_until(lock, deadline, [&] { return is_terminal(r->state); });
}

bool job_server::cancel(job_id id) {
  const auto now = clock_type::now();
  detail::delivery d;
  std::shared_ptr<job_record> running;
  {
    std::lock_guard lock(s_->mu);
    auto r = s_->find_locked(id, now);
    if (is_terminal(r->state)) return false;
    if (r->context.cancel_requested.load(std::memory_order_relaxed)) return true;  // relaxed: written under mu, held
    r->reason = "cancelled by request";
    // Release: a program that sees the flag sees the reason (and all before).
    r->context.cancel_requested.store(true, std::memory_order_release);
    if (r->state == job_state::running) {
      running = std::move(r);  // ends cancelled when its root returns (reap)
    } else {
      // Queued: cancelled at once; it never had a pool.
      s_->queue.erase(std::find(s_->queue.begin(), s_->queue.end(), r));
      r->error = r->reason;
      d = s_->finish_locked(*r, job_state::cancelled, now);
      s_->publish_counts_locked();
    }
  }
  if (running) {
    s_->request_stop(*running);
    return true;
  }
  d.run();
  return true;
}

void job_server::on_terminal(job_id id, std::function<void(const job_info&)> f) {
  if (!f) throw std::invalid_argument("job_server::on_terminal: empty callback");
  job_info info;
  {
    std::lock_guard lock(s_->mu);
    auto r = s_->find_locked(id, clock_type::now());
    if (!is_terminal(r->state)) {
      r->callbacks.push_back(std::move(f));
      return;
    }
    info = s_->info_locked(*r, clock_type::now());
  }
  f(info);
}

void job_server::set_policy(const std::string& name) { detail::install_policy(s_->rt, name, s_->sizes); }

void job_server::stop_accepting() {
  {
    std::lock_guard lock(s_->mu);
    s_->draining = true;
    s_->publish_counts_locked();
  }
  p_->end_all();
}

bool job_server::accepting() const noexcept {
  return !s_->draining_mirror.load(std::memory_order_relaxed);  // relaxed: a snapshot
}

bool job_server::ready() const noexcept {
  // Relaxed: a snapshot for /readyz; admission itself decides under the mutex.
  return !s_->draining_mirror.load(std::memory_order_relaxed) &&
         (s_->running_mirror.load(std::memory_order_relaxed) < s_->opts.max_running ||
          s_->queued_mirror.load(std::memory_order_relaxed) < s_->opts.max_queued);
}

std::size_t job_server::drain(std::chrono::milliseconds timeout) {
  stop_accepting();
  return s_->drain(timeout, std::nullopt).cancelled;
}

job_server::drain_report job_server::drain_within(std::chrono::milliseconds timeout, std::chrono::milliseconds cancel_grace) {
  stop_accepting();
  return s_->drain(timeout, cancel_grace);
}

void job_server::state::request_stop(detail::job_record& r) noexcept {
  // Outside mu: the stop callbacks run here, on this thread (they wake the
  // job's parked waits and cancel its io:: operations), and must not run
  // under the server's lock.
  r.context.stop.request_stop();
}

job_server::drain_report job_server::state::drain(std::chrono::milliseconds timeout,
                                                  std::optional<std::chrono::milliseconds> cancel_grace) {
  // The server's stop_accepting() ran before (it also ends the periodic tasks).
  drain_report report;
  std::unique_lock lock(mu);
  const auto idle = [&] { return idle_locked(); };
  if (idle_cv.wait_for(lock, timeout, idle)) return report;
  // Time is up: queued jobs are cancelled at once, running ones are told to stop.
  const auto now = clock_type::now();
  std::vector<std::shared_ptr<job_record>> to_stop;
  std::vector<detail::delivery> ds;
  for (auto& [id, r] : jobs) {
    if (is_terminal(r->state) || r->context.cancel_requested.load(std::memory_order_relaxed)) continue;  // relaxed: under mu
    r->reason = "cancelled: the server drained and the job did not finish within " + std::to_string(timeout.count()) + " ms";
    r->context.cancel_requested.store(true, std::memory_order_release);  // release: as in cancel()
    if (r->state == job_state::running) to_stop.push_back(r);
    ++report.cancelled;
  }
  while (!queue.empty()) {
    auto r = std::move(queue.front());
    queue.pop_front();
    r->error = r->reason;
    ds.push_back(finish_locked(*r, job_state::cancelled, now));
  }
  publish_counts_locked();
  lock.unlock();
  for (auto& r : to_stop) request_stop(*r);
  to_stop.clear();
  for (auto& d : ds) d.run();
  lock.lock();
  if (!cancel_grace) {
    idle_cv.wait(lock, idle);
    return report;
  }
  if (idle_cv.wait_for(lock, *cancel_grace, idle)) return report;
  // The grace is over: what still runs ignores its cancellation. Queued
  // jobs cannot be left (admission stopped when draining began; a job
  // ending now starts no queued one, the queue is empty), deliveries in
  // flight end on their own (they never wait for jobs).
  const auto t = clock_type::now();
  for (auto& [id, r] : jobs)
    if (r->state == job_state::running) report.abandoned.push_back(info_locked(*r, t));
  std::sort(report.abandoned.begin(), report.abandoned.end(),
            [](const job_info& a, const job_info& b) { return a.id < b.id; });
  return report;
}

}  // namespace promptly::server
