// Tests that need to see individual workers of a runtime (their sleep
// slots): capture them, and ask whether they sleep. Reads scheduler
// internals (src/sched/worker.hpp); the public view of the same facts is
// runtime::stats().worker_states and sleeping_workers.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "promptly/promptly.hpp"
#include "sched/worker.hpp"
#include "test_support.hpp"

// Every worker of `rt`: one task per worker records where it runs and spins
// (without parking) until all have arrived, so they ran on distinct workers.
// Empty if they did not all arrive within the hang guard. `on_worker(i)`,
// if given, runs in task i on its worker's thread before the spin.
inline std::vector<promptly::detail::worker*> capture_workers(promptly::runtime& rt,
                                                              const std::function<void(unsigned)>& on_worker = {}) {
  const unsigned n = rt.workers();
  std::vector<std::atomic<promptly::detail::worker*>> seen(n);
  std::atomic<unsigned> arrived{0};
  std::vector<promptly::future<void>> fs;
  for (unsigned i = 0; i < n; ++i)
    fs.push_back(rt.submit([&, i] {
      seen[i] = &promptly::detail::worker::of(*promptly::detail::current_worker());
      if (on_worker) on_worker(i);
      arrived.fetch_add(1);
      wait_until([&] { return arrived.load() == n; });
    }));
  for (auto& f : fs) f.get();
  std::vector<promptly::detail::worker*> ws;
  if (arrived.load() != n) return ws;
  for (auto& w : seen) ws.push_back(w.load());
  return ws;
}

// The worker sleeps in its slot (committed to the futex wait).
inline bool asleep(const promptly::detail::worker* w) {
  return w->slot.state.load() == promptly::detail::sleep_slot::sleeping;
}

// Every worker sleeps in its slot without a timeout (an idle runtime's
// workers all do, Lemma 1' in src/sched/README.md).
inline bool all_asleep(const std::vector<promptly::detail::worker*>& ws) {
  for (auto* w : ws)
    if (!asleep(w)) return false;
  return true;
}
