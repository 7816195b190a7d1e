// Periodic tasks of the job server (AMCilk Sec. 6.2): a task releases one
// job (an instance) per period on a fixed grid, t0 + k * period; an
// instance's deadline is its release + period. One release thread per
// server, started with the first periodic task. Internal to src/server/jobs.
//
// Invariants (all under `mu`)
//  * `due` holds exactly one entry per active task: its next release time.
//    A task leaves `due` when it becomes inactive (count reached, cancelled,
//    draining, server stopping) and never re-enters it.
//  * released = accepted instances + rejected; accepted instances end in
//    exactly one of done / failed / cancelled (their on_terminal callback
//    counts them), so a task is settled when released == done + failed +
//    cancelled + rejected; only settled inactive tasks expire (result_ttl
//    after they became inactive).
//  * Instance callbacks reach this object through a raw pointer: ~job_server
//    stops the release thread, then drains (which waits until every
//    callback ran), and only then destroys this object.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "promptly/server/job_server.hpp"

namespace promptly::server {

struct job_server::periodic_state {
  using clock = std::chrono::steady_clock;

  struct task {
    std::string program;
    json args;
    periodic_options opts;
    periodic_info info;
    clock::time_point ended{};  // when it became inactive
  };

  periodic_state(job_server& s, std::chrono::milliseconds ttl) : srv(s), result_ttl(ttl) {}
  ~periodic_state() { stop(); }

  periodic_id add(std::string_view program, const json& args, periodic_options opts);
  periodic_info status(periodic_id id);
  bool cancel(periodic_id id);
  std::vector<periodic_info> all();
  // Draining: no task releases another instance.
  void end_all();
  // Ends every task and joins the release thread; idempotent.
  void stop();

 private:
  void release_loop();
  // Submits one instance of `t` released at `due`; false if the server
  // refused it (rejected instances are counted, other errors rethrown when
  // `rethrow`).
  bool release(const std::shared_ptr<task>& t, clock::time_point due, bool rethrow);
  void count_release_locked(task& t);
  void deactivate_locked(task& t, clock::time_point now);
  void expire_locked(clock::time_point now);
  std::shared_ptr<task> find_locked(periodic_id id, clock::time_point now);

  job_server& srv;
  const std::chrono::milliseconds result_ttl;
  std::mutex mu;
  std::condition_variable cv;
  std::map<periodic_id, std::shared_ptr<task>> tasks;
  std::multimap<clock::time_point, periodic_id> due;
  periodic_id next_id = 1;
  bool stopping = false;
  std::thread releaser;
};

}  // namespace promptly::server
