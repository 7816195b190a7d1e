// The job server's periodic tasks (AMCilk Sec. 6.2): releases on a fixed
// grid by one thread, deadlines met or missed counted per task.
// Invariants: periodic_state.hpp.
#include <optional>

#include "periodic_state.hpp"

namespace promptly::server {

namespace {
// Shorter periods would turn the release thread into a submission flood;
// more active tasks than this is a client gone wrong, refused like a full queue.
constexpr std::chrono::microseconds min_period{100};
constexpr std::size_t max_active = 256;
double us_of(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }
}  // namespace

json to_json(const periodic_info& p) {
  return {{"id", p.id},
          {"program", p.program},
          {"period_ms", std::chrono::duration<double, std::milli>(p.period).count()},
          {"count", p.count},
          {"active", p.active},
          {"released", p.released},
          {"done", p.done},
          {"failed", p.failed},
          {"cancelled", p.cancelled},
          {"rejected", p.rejected},
          {"missed", p.missed},
          {"last_job", p.last_job}};
}

bool job_server::periodic_state::release(const std::shared_ptr<task>& t, clock::time_point due_at, bool rethrow) {
  const clock::time_point submitted = clock::now();
  std::optional<job_handle> h;
  try {
    h = srv.submit(t->program, t->args, t->opts.submit);
  } catch (const error& e) {
    if (rethrow) throw;
    std::lock_guard lock(mu);
    count_release_locked(*t);
    ++t->info.rejected;
    ++t->info.missed;  // a rejected instance never runs by its deadline
    // A full queue may drain by the next period; anything else (draining, a
    // program that no longer validates) will not: the task ends.
    if (e.code() != error_code::rejected || !srv.accepting()) deactivate_locked(*t, clock::now());
    return false;
  }
  {
    std::lock_guard lock(mu);
    count_release_locked(*t);
    t->info.last_job = h->id();
  }
  // How late the release was counts against the deadline (release + period):
  // flow_us runs from the accepted submission.
  const double late_us = us_of(submitted - due_at);
  const double period_us = us_of(t->opts.period);
  srv.on_terminal(h->id(), [this, t, late_us, period_us](const job_info& j) {
    std::lock_guard lock(mu);
    if (j.state == job_state::done) ++t->info.done;
    else if (j.state == job_state::failed) ++t->info.failed;
    else ++t->info.cancelled;
    if (late_us + j.timing.flow_us > period_us) ++t->info.missed;
  });
  return true;
}

periodic_id job_server::periodic_state::add(std::string_view program, const json& args, periodic_options opts) {
  if (opts.period < min_period)
    throw error(error_code::bad_args, "a periodic task's period must be at least " + std::to_string(min_period.count()) +
                                          " us (got " + std::to_string(opts.period.count()) + " us)");
  {
    std::lock_guard lock(mu);
    if (due.size() >= max_active)
      throw error(error_code::rejected, "too many periodic tasks (" + std::to_string(due.size()) +
                                            " active); cancel one first");
  }
  auto t = std::make_shared<task>();
  t->program = std::string(program);
  t->args = args;
  t->opts = std::move(opts);
  t->info.program = t->program;
  t->info.period = t->opts.period;
  t->info.count = t->opts.count;
  t->info.active = true;
  const clock::time_point t0 = clock::now();
  release(t, t0, /*rethrow=*/true);  // the first instance's errors are the caller's
  std::lock_guard lock(mu);
  t->info.id = next_id++;
  tasks.emplace(t->info.id, t);
  if (stopping || !t->info.active) {  // a count of 1 ended with the first release
    deactivate_locked(*t, clock::now());
  } else {
    due.emplace(t0 + t->opts.period, t->info.id);
    if (!releaser.joinable()) releaser = std::thread([this] { release_loop(); });
    cv.notify_one();
  }
  return t->info.id;
}

void job_server::periodic_state::release_loop() {
  std::unique_lock lock(mu);
  while (!stopping) {
    if (due.empty()) {
      cv.wait(lock);
      continue;
    }
    const auto next = due.begin();
    if (clock::now() < next->first) {
      // A copy: while this waits, cancel or end_all may erase the entry.
      const clock::time_point wake = next->first;
      cv.wait_until(lock, wake);
      continue;
    }
    const clock::time_point at = next->first;
    const periodic_id id = next->second;
    due.erase(next);
    const std::shared_ptr<task> t = tasks.at(id);  // an active task is in `tasks` (never expired)
    lock.unlock();
    (void)release(t, at, /*rethrow=*/false);
    lock.lock();
    if (!t->info.active) continue;  // the last one, cancelled, drained or refused for good meanwhile
    // On the grid: the next release is one period after this one's due
    // time; releases that fell behind by whole periods are skipped (and
    // counted missed) rather than fired in a burst.
    clock::time_point next_at = at + t->opts.period;
    const clock::time_point now = clock::now();
    if (next_at + t->opts.period <= now) {
      const auto behind = (now - next_at) / t->opts.period;
      t->info.missed += static_cast<std::uint64_t>(behind);
      next_at += behind * t->opts.period;
    }
    due.emplace(next_at, id);
  }
}

// The last release ends the task in the same step, so a reader that sees
// every instance done also sees the task inactive.
void job_server::periodic_state::count_release_locked(task& t) {
  ++t.info.released;
  if (t.opts.count != 0 && t.info.released >= t.opts.count) deactivate_locked(t, clock::now());
}

void job_server::periodic_state::deactivate_locked(task& t, clock::time_point now) {
  if (!t.info.active) return;
  t.info.active = false;
  t.ended = now;
  for (auto it = due.begin(); it != due.end(); ++it)
    if (it->second == t.info.id) {
      due.erase(it);
      break;
    }
}

void job_server::periodic_state::expire_locked(clock::time_point now) {
  for (auto it = tasks.begin(); it != tasks.end();) {
    const periodic_info& i = it->second->info;
    const bool settled = i.released == i.done + i.failed + i.cancelled + i.rejected;
    if (!i.active && settled && now - it->second->ended >= result_ttl) it = tasks.erase(it);
    else ++it;
  }
}

std::shared_ptr<job_server::periodic_state::task> job_server::periodic_state::find_locked(periodic_id id, clock::time_point now) {
  expire_locked(now);
  if (auto it = tasks.find(id); it != tasks.end()) return it->second;
  if (id != 0 && id < next_id)
    throw error(error_code::unknown_job, "periodic task " + std::to_string(id) + " ended more than " +
                                             std::to_string(result_ttl.count()) + " ms ago; its record has expired");
  throw error(error_code::unknown_job, "no periodic task with id " + std::to_string(id));
}

periodic_info job_server::periodic_state::status(periodic_id id) {
  std::lock_guard lock(mu);
  return find_locked(id, clock::now())->info;
}

bool job_server::periodic_state::cancel(periodic_id id) {
  std::lock_guard lock(mu);
  const auto now = clock::now();
  auto t = find_locked(id, now);
  const bool was = t->info.active;
  deactivate_locked(*t, now);
  return was;
}

std::vector<periodic_info> job_server::periodic_state::all() {
  std::lock_guard lock(mu);
  expire_locked(clock::now());
  std::vector<periodic_info> out;
  out.reserve(tasks.size());
  for (const auto& [id, t] : tasks) out.push_back(t->info);
  return out;
}

void job_server::periodic_state::end_all() {
  std::lock_guard lock(mu);
  const auto now = clock::now();
  for (auto& [id, t] : tasks) deactivate_locked(*t, now);
}

void job_server::periodic_state::stop() {
  {
    std::lock_guard lock(mu);
    stopping = true;
    const auto now = clock::now();
    for (auto& [id, t] : tasks) deactivate_locked(*t, now);
  }
  cv.notify_all();
  if (releaser.joinable()) releaser.join();
}

// --- job_server's API ----------------------------------------------------------

periodic_id job_server::submit_periodic(std::string_view program, const json& args, periodic_options opts) {
  return p_->add(program, args, std::move(opts));
}

periodic_info job_server::periodic_status(periodic_id id) const { return p_->status(id); }

bool job_server::cancel_periodic(periodic_id id) { return p_->cancel(id); }

}  // namespace promptly::server
