// The opt-in scheduler event trace (runtime_config::trace_file or
// PROMPTLY_TRACE): what each worker and the policy thread did, written at
// shutdown as Chrome trace-event JSON (Perfetto UI, chrome://tracing).
//
// Invariants
//  * One writer per ring at a time: each worker records into its own ring
//    on its own thread, the policy thread into its own (under
//    policy_mutex_), threads that are no worker into the external ring under
//    its spin lock; the file is written after the workers and the policy
//    thread have been joined (the external ring is read under its lock), so
//    the writer reads rings nobody writes any more.
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
  spawn,       // the running task made a task ready (pool; arg = the running fiber, arg2 = the new task)
  submit,      // a thread that is no worker made a task ready (external ring; pool; arg2 = the task)
  wake_ready,  // a parked fiber was made ready to resume (pool; arg = the waking fiber or 0, arg2 = the parked fiber)
  preempt,     // a standby thread was sent to a pool whose work waited behind strands (pool; arg = its worker; policy thread)
};

struct trace_record {
  std::uint64_t ns;
  std::uint32_t pool;
  trace_kind kind;
  std::uint32_t arg;
  std::uint32_t arg2;  // in what was padding: the record stays 24 bytes
};
static_assert(sizeof(trace_record) == 24);

// A task's name in the trace (tasks are 16-byte aligned; the name is reused
// once the memory is, so a reader matches a task's start with the latest
// spawn or submit of that name). A fiber's name is its trace number
// (fiber.hpp).
inline std::uint32_t trace_id(const struct task* t) noexcept {
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(t) >> 4);
}

class trace_ring {
 public:
  explicit trace_ring(std::size_t capacity = 0) : records_(capacity) {}
  void record(trace_kind kind, std::uint64_t ns, std::uint32_t pool, std::uint32_t arg = 0,
              std::uint32_t arg2 = 0) noexcept {
    if (records_.empty()) return;
    records_[next_ % records_.size()] = {ns, pool, kind, arg, arg2};
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
// instant events. `worker_rings[i]` is worker i (tracks "worker i" for the first `cores`, then
// "standby k" for the standby threads of preemption); the policy thread and the
// threads that are no worker (submitters, the I/O reactor, promise setters)
// have a track each after them; `t0_ns` is time zero (a now_ns() time, written
// as otherData.t0_steady_ns for samples taken on the same clock). The format is
// docs/tracing.md's. Throws std::runtime_error if the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<const trace_ring*>& worker_rings, unsigned cores,
                        const trace_ring& policy_ring, const trace_ring& external_ring, std::uint64_t t0_ns);

}  // namespace promptly::detail
