// The runtime-information view of the server (AMCilk Sec. 4.1): totals,
// flow-time summaries over a sliding window, and per running job the cores
// serving its pool and its work vs. looking (steal / idle) time, read from
// runtime::stats(). Also occupancy control (set_cores, AMCilk Sec. 4.2).
//
// Invariants: the server mutex is never held while runtime::stats() runs
// (it takes the runtime's own locks); a job's pool id is read under the
// mutex while the job is running, so it cannot be a reused id of a removed
// pool (the reaper removes the pool before the job leaves state running).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "periodic_state.hpp"
#include "server_state.hpp"

namespace promptly::server {

namespace {

struct live_job {
  job_info info;
  std::uint32_t pool = detail::no_pool_id;
};

// Fills cores, work_s and look_s of the running jobs from one runtime snapshot;
// returns the workers serving some job's pool (cores in use).
unsigned fill_cores(const promptly::runtime& rt, std::vector<live_job>& jobs) {
  const runtime_stats rs = rt.stats();
  std::unordered_map<std::uint32_t, live_job*> by_pool;
  for (auto& j : jobs)
    if (j.pool != detail::no_pool_id) by_pool[j.pool] = &j;
  for (const auto& p : rs.pools)
    if (auto it = by_pool.find(p.id); it != by_pool.end()) {
      it->second->info.work_s = p.work_s;
      it->second->info.look_s = p.look_s;
    }
  unsigned in_use = 0;
  for (const auto& w : rs.worker_states) {
    if (w.state == "sleeping") continue;
    if (auto it = by_pool.find(w.serving); it != by_pool.end()) {
      ++it->second->info.cores;
      ++in_use;
    }
  }
  return in_use;
}

std::vector<live_job> live_jobs_locked(const job_server::state& s, clock_type::time_point now, bool running_only) {
  std::vector<live_job> out;
  for (const auto& [id, r] : s.jobs) {
    if (is_terminal(r->state) || (running_only && r->state != job_state::running)) continue;
    live_job j;
    j.info = s.info_locked(*r, now);
    if (r->state == job_state::running) j.pool = r->context.pool.load(std::memory_order_acquire);  // acquire: see start()
    out.push_back(std::move(j));
  }
  std::sort(out.begin(), out.end(), [](const live_job& a, const live_job& b) { return a.info.id < b.info.id; });
  return out;
}

}  // namespace

std::vector<job_info> job_server::jobs() const {
  std::vector<live_job> live;
  {
    std::lock_guard lock(s_->mu);
    live = live_jobs_locked(*s_, clock_type::now(), false);
  }
  fill_cores(s_->rt, live);
  std::vector<job_info> out;
  out.reserve(live.size());
  for (auto& j : live) out.push_back(std::move(j.info));
  return out;
}

server_stats job_server::stats() const {
  server_stats st;
  std::vector<live_job> live;
  {
    std::lock_guard lock(s_->mu);
    const auto now = clock_type::now();
    st.submitted = s_->submitted;
    st.rejected = s_->rejected;
    st.done = s_->done;
    st.failed = s_->failed;
    st.cancelled = s_->cancelled;
    st.running = s_->running;
    st.queued = s_->queue.size();
    st.core_limit = s_->core_limit;
    st.draining = s_->draining;
    const latency_summary f = s_->flow.summary();
    st.flow_mean_us = f.mean_us;
    st.flow_p50_us = f.p50_us;
    st.flow_p99_us = f.p99_us;
    st.start = s_->start_lat.summary();
    st.setup = s_->setup_lat.summary();
    st.remove = s_->remove_lat.summary();
    st.end = s_->end_lat.summary();
    for (const auto& [name, c] : s_->per_program) {
      const latency_summary pf = c.flow.summary();
      st.programs.push_back({name, c.done, c.failed, c.cancelled, pf.mean_us, pf.p50_us, pf.p99_us});
    }
    live = live_jobs_locked(*s_, now, true);
  }
  st.cores_in_use = fill_cores(s_->rt, live);
  for (auto& j : live) st.jobs.push_back(std::move(j.info));
  st.periodic = p_->all();
  st.size_estimates = s_->sizes.stats();
  return st;
}

}  // namespace promptly::server

namespace promptly::server {

void job_server::set_cores(unsigned n) {
  const unsigned workers = s_->rt.workers();
  if (n > workers)
    throw std::invalid_argument("set_cores: " + std::to_string(n) + " cores asked, the runtime has " + std::to_string(workers) +
                                " workers (0 = all)");
  s_->rt.set_core_limit(n);
  std::lock_guard lock(s_->mu);
  s_->core_limit = n;
}

}  // namespace promptly::server
