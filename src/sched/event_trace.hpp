// The opt-in scheduler event trace (runtime_config::trace_file or
// PROMPTLY_TRACE): what each worker and the policy thread did, written at
// shutdown as Chrome trace-event JSON (Perfetto UI, chrome://tracing).
//
// Invariants
//  * One writer per ring: each worker records into its own ring on its own
//    thread, the policy thread into its own (under policy_mutex_); the file is
//    written after every thread that records has been joined, so the writer
//    reads rings nobody writes any more.
//  * Off, a recording site costs one predictable branch (scheduler::tracing_,
//    fixed at construction); the ring is never touched.
//  * A full ring keeps the most recent events and counts what it dropped;
//    the file says how many per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace promptly::detail {

// Task events name the fiber that runs the task (trace_id): a task's
// stretch runs on one fiber from its start or resumption to its end or park.
enum class trace_kind : std::uint8_t {
  task_start,  // the loop starts a task (pool; arg = the fiber)
  task_end,    // a task returned to the loop (arg = the fiber it returned on)
  park,        // the running task parked its fiber (a wait, or a move at a strand boundary; arg = that fiber)
  resume,      // the task the loop just started is a resume record: the parked fiber (arg) runs on
  steal,       // a steal succeeded (pool)
  mug,         // a whole deque was taken (pool)
  move,        // the worker moved to another pool (pool = the new one)
  sleep,       // the worker waits in the notifier
  wake,        // ... and runs again
  decision,    // the policy decided (arg = events in the batch; policy thread)
};

struct trace_record {
  std::uint64_t ns;
  std::uint32_t pool;
  trace_kind kind;
  std::uint32_t arg;
};

// A fiber's name in the trace (records are long-lived and 16-byte aligned).
inline std::uint32_t trace_id(const void* fiber) noexcept {
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(fiber) >> 4);
}

class trace_ring {
 public:
  explicit trace_ring(std::size_t capacity = 0) : records_(capacity) {}
  void record(trace_kind kind, std::uint64_t ns, std::uint32_t pool, std::uint32_t arg = 0) noexcept {
    if (records_.empty()) return;
    records_[next_ % records_.size()] = {ns, pool, kind, arg};
    ++next_;
  }
  // Oldest first.
  std::vector<trace_record> ordered() const;
  std::uint64_t dropped() const noexcept { return next_ > records_.size() ? next_ - records_.size() : 0; }

 private:
  std::vector<trace_record> records_;
  std::uint64_t next_ = 0;
};

// Writes the rings as Chrome trace-event JSON: a task's running stretches
// become complete events ("X") on its worker's track (a parked task's
// stretch ends at the park and a new one starts where it resumes), the rest
// instant events. `worker_rings[i]` is worker i; `t0_ns` is time zero.
// Throws std::runtime_error if the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<const trace_ring*>& worker_rings,
                        const trace_ring& policy_ring, std::uint64_t t0_ns);

}  // namespace promptly::detail
