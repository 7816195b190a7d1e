// Chrome trace-event JSON from the scheduler's rings (event_trace.hpp).
#include "event_trace.hpp"

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <stdexcept>
#include <unordered_map>

namespace promptly::detail {

std::vector<trace_record> trace_ring::ordered() const {
  std::vector<trace_record> out;
  const std::size_t n = records_.size();
  if (n == 0) return out;
  const std::uint64_t count = next_ < n ? next_ : n;
  out.reserve(count);
  for (std::uint64_t k = next_ - count; k < next_; ++k) out.push_back(records_[k % n]);
  return out;
}

namespace {

const char* name_of(trace_kind k) {
  switch (k) {
    case trace_kind::task_start: return "task";
    case trace_kind::task_end: return "task end";
    case trace_kind::park: return "park";
    case trace_kind::resume: return "resume";
    case trace_kind::steal: return "steal";
    case trace_kind::mug: return "mug";
    case trace_kind::move: return "move";
    case trace_kind::sleep: return "sleep";
    case trace_kind::wake: return "wake";
    case trace_kind::decision: return "decision";
    case trace_kind::spawn: return "spawn";
    case trace_kind::submit: return "submit";
    case trace_kind::wake_ready: return "wake ready";
    case trace_kind::preempt: return "preempt";
  }
  return "?";
}

class json_events {
 public:
  explicit json_events(std::ofstream& out) : out_(out) {}
  void complete(unsigned tid, std::uint64_t start, std::uint64_t end, std::uint32_t pool, bool resumed,
                std::uint32_t fiber, std::uint32_t task, bool parked) {
    begin();
    out_ << R"({"name":")" << (resumed ? "task (resumed)" : "task") << R"(","cat":"pool )" << pool
         << R"(","ph":"X","pid":1,"tid":)" << tid << R"(,"ts":)" << us(start) << R"(,"dur":)" << duration_us(start, end)
         << R"(,"args":{"pool":)" << pool << R"(,"fiber":)" << fiber << R"(,"task":)" << task << R"(,"end":")"
         << (parked ? "park" : "end") << R"("}})";
  }
  void instant(unsigned tid, const trace_record& r) {
    begin();
    out_ << R"({"name":")" << name_of(r.kind) << R"(","ph":"i","s":"t","pid":1,"tid":)" << tid << R"(,"ts":)"
         << us(r.ns) << R"(,"args":{"pool":)" << r.pool;
    switch (r.kind) {
      case trace_kind::spawn: out_ << R"(,"fiber":)" << r.arg << R"(,"task":)" << r.arg2; break;
      case trace_kind::submit: out_ << R"(,"task":)" << r.arg2; break;
      case trace_kind::wake_ready: out_ << R"(,"fiber":)" << r.arg << R"(,"target":)" << r.arg2; break;
      case trace_kind::park: out_ << R"(,"arg":)" << r.arg << R"(,"fiber":)" << r.arg; break;
      default: out_ << R"(,"arg":)" << r.arg;
    }
    out_ << "}}";
  }
  void thread_name(unsigned tid, const std::string& name, std::uint64_t dropped) {
    begin();
    out_ << R"({"name":"thread_name","ph":"M","pid":1,"tid":)" << tid << R"(,"args":{"name":")" << name << R"("}})";
    begin();
    out_ << R"({"name":"dropped events","ph":"C","pid":1,"tid":)" << tid << R"(,"ts":0,"args":{"dropped":)" << dropped
         << "}}";
  }
  void set_t0(std::uint64_t t0) { t0_ = t0; }

 private:
  void begin() {
    if (!first_) out_ << ",\n";
    first_ = false;
  }
  // Time since t0, and a duration (not since t0: a duration is smaller than
  // t0, a steady-clock time, and came out as 0 when both went through us()).
  double us(std::uint64_t ns) const { return static_cast<double>(ns > t0_ ? ns - t0_ : 0) * 1e-3; }
  static double duration_us(std::uint64_t start, std::uint64_t end) {
    return static_cast<double>(end > start ? end - start : 0) * 1e-3;
  }
  std::ofstream& out_;
  bool first_ = true;
  std::uint64_t t0_ = 0;
};

struct open_stretch {
  std::uint64_t start;
  std::uint32_t pool;
  bool resumed;
  std::uint32_t task;  // 0 for a resumed stretch
};

// A worker's events in order. A stretch opens at a task's start, or where a
// resume record switches to the parked fiber (the record's own start is then
// dropped), and closes at the end or park on the same fiber; an end on a
// fiber with nothing open (an idle fiber coming back, or a start that fell
// out of the ring) closes nothing.
void write_worker(json_events& ev, unsigned tid, const std::vector<trace_record>& records) {
  std::unordered_map<std::uint32_t, open_stretch> open;
  std::uint32_t last_started = 0;
  for (const trace_record& r : records) {
    switch (r.kind) {
      case trace_kind::task_start:
        open[r.arg] = {r.ns, r.pool, false, r.arg2};
        last_started = r.arg;
        break;
      case trace_kind::resume:
        open.erase(last_started);
        open[r.arg] = {r.ns, r.pool, true, 0};
        break;
      case trace_kind::task_end:
      case trace_kind::park:
        if (auto it = open.find(r.arg); it != open.end()) {
          ev.complete(tid, it->second.start, r.ns, it->second.pool, it->second.resumed, it->first, it->second.task,
                      r.kind == trace_kind::park);
          open.erase(it);
        }
        if (r.kind == trace_kind::park) ev.instant(tid, r);
        break;
      default:
        ev.instant(tid, r);
    }
  }
}

}  // namespace

void write_chrome_trace(const std::string& path, const std::vector<const trace_ring*>& worker_rings, unsigned cores,
                        const trace_ring& policy_ring, const trace_ring& external_ring, std::uint64_t t0_ns) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error("promptly: cannot write the trace file '" + path + "'");
  out << std::fixed << std::setprecision(3);  // ns resolution in us; the default 6 digits were 10 us after 1 s
  // otherData.t0_steady_ns: time 0 on the steady clock (now_ns()), so that samples taken beside the
  // run on the same clock (promptly-prof record-os: the OS's run-queue waits and steal time) line up.
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"t0_steady_ns\":" << t0_ns << "},\"traceEvents\":[\n";
  json_events ev(out);
  ev.set_t0(t0_ns);
  for (unsigned i = 0; i < worker_rings.size(); ++i) {
    // The standby threads of preemption come after the cores (preemption.cpp).
    ev.thread_name(i, i < cores ? "worker " + std::to_string(i) : "standby " + std::to_string(i - cores),
                   worker_rings[i]->dropped());
    write_worker(ev, i, worker_rings[i]->ordered());
  }
  const auto policy_tid = static_cast<unsigned>(worker_rings.size());
  ev.thread_name(policy_tid, "policy", policy_ring.dropped());
  for (const trace_record& r : policy_ring.ordered()) ev.instant(policy_tid, r);
  ev.thread_name(policy_tid + 1, "external", external_ring.dropped());
  for (const trace_record& r : external_ring.ordered()) ev.instant(policy_tid + 1, r);
  out << "\n]}\n";
  if (!out) throw std::runtime_error("promptly: writing the trace file '" + path + "' failed");
}

}  // namespace promptly::detail
