// Suite `jobs`, oneTBB with one task_arena per job: the trace's jobs in one process, each job
// enqueued (task_arena::enqueue, fire-and-forget) into an arena of its own created at its
// release, so that oneTBB's market (not the program) shares the worker threads between the jobs
// running at once, the way oneTBB's documentation isolates concurrent independent work. A job
// sums the Bing-like pieces of its units with tbb::parallel_reduce over a blocked_range of pieces
// with grain 1 and simple_partitioner (halving down to one piece, as Promptly's join recursion),
// and records its checksum and end time as its last action. Driver and metrics: jobs_common.hpp.
//
// Threads: the releasing thread (main) only sleeps to each arrival and never enters an arena, so
// the jobs get --workers TBB worker threads: global_control's max_allowed_parallelism counts the
// external thread too (oneTBB starts max_allowed_parallelism - 1 workers), hence --workers + 1,
// and each arena reserves no slot for an external thread (task_arena(workers, 0)), so all of its
// --workers slots can take a worker.
//
// Arenas: one finished job's arena is destroyed by main at the next release (or while main waits
// for the last jobs), so only the arenas of running jobs and of jobs finished since the last
// release exist: the market's list of arenas stays the size of the load, not of the trace.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jobs_common.hpp"
#include "tbb_job_checksum.hpp"

namespace {

// One replay's jobs. A job writes its own checksum and end_ns slots, then reports under `m`;
// main reads the slots only after seeing the report under `m`, so the mutex orders them.
struct replay_state {
  std::vector<std::int64_t> end_ns;
  std::vector<std::uint64_t> checksum;
  std::vector<std::unique_ptr<tbb::task_arena>> arenas;  // touched by main only
  std::mutex m;
  std::condition_variable all_done;
  std::vector<std::size_t> finished;  // jobs ended whose arena main has not destroyed yet
  std::size_t done = 0;
  explicit replay_state(std::size_t n) : end_ns(n), checksum(n), arenas(n) {}

  // Main: destroys the arenas of the jobs that ended. A worker may still be leaving such an
  // arena; oneTBB frees its internals when the last thread has left.
  void destroy_finished() {
    std::vector<std::size_t> ended;
    {
      std::lock_guard lock(m);
      ended.swap(finished);
    }
    for (std::size_t k : ended) arenas[k].reset();
  }

  // Main: starts job i in an arena of its own.
  void release(std::size_t i, unsigned workers, std::uint64_t units, std::uint64_t piece, std::uint64_t seed) {
    destroy_finished();
    arenas[i] = std::make_unique<tbb::task_arena>(static_cast<int>(workers), 0);
    arenas[i]->enqueue([this, i, units, piece, seed] {
      const std::uint64_t sum = jobs::tbb_job_checksum(units, piece, seed);
      checksum[i] = sum;
      end_ns[i] = jobs::now_ns();
      // Notified under the lock: once main sees `done` reach the count it destroys this state,
      // so the job must not touch it after unlocking.
      std::lock_guard lock(m);
      finished.push_back(i);
      ++done;
      all_done.notify_one();
    });
  }

  // Main: waits until `count` jobs ended, destroying arenas as their jobs end.
  void wait_all(std::size_t count) {
    for (;;) {
      {
        std::unique_lock lock(m);
        all_done.wait(lock, [&] { return done == count || !finished.empty(); });
        if (done == count && finished.empty()) break;
      }
      destroy_finished();
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  return jobs::main(
      argc, argv, [](bench::args&) {},
      [](unsigned workers) -> jobs::run_trace_fn {
        auto limit = std::make_shared<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                           static_cast<std::size_t>(workers) + 1);
        // Warm-up: the worker threads exist and the code path runs once before the first replay;
        // each job is checked against the serial sum.
        {
          replay_state st(20);
          for (std::size_t k = 0; k < 20; ++k) st.release(k, workers, 200, 10, k);
          st.wait_all(20);
          for (std::size_t k = 0; k < 20; ++k)
            if (st.checksum[k] != jobs::bing_piece(0, 200, k)) bench::args::fail("warm-up job computed a wrong sum");
        }
        return [limit, workers](const jobs::plan& p, std::int64_t& t0) {
          const std::uint64_t piece = p.tr->piece_units;
          replay_state st(p.count);
          t0 = jobs::replay(p, [&](std::size_t i) {
            const jobs::job& j = p.tr->jobs[i];
            st.release(i, workers, j.units, piece, j.seed);
          });
          st.wait_all(p.count);
          jobs::outcome o;
          o.end_ns = st.end_ns;
          for (std::uint64_t c : st.checksum) o.checksum += c;
          return o;
        };
      });
}
