// What every protocol connection shares: the job server it dispatches to,
// and the counters the daemon's metrics endpoint exposes (requests by op,
// errors by code, flow-time histograms per program of the jobs submitted
// through the protocol, connections).
//
// Invariants: counters only grow; a histogram observation is recorded
// exactly once per accepted job, when it becomes terminal (from the
// job_server's on_terminal callback), so the histogram's count equals the
// terminal jobs submitted through this service. The histograms live in a
// shared_ptr the callbacks hold, so a job finishing while the service is
// being destroyed never touches freed memory.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <promptly/server/job_server.hpp>

namespace promptly::server::protocol {

// The protocol's ops (docs/server.md, "Ops"); `other` counts unknown ones.
enum class op {
  submit, wait, status, cancel, jobs, stats, subscribe, unsubscribe,
  set_policy, set_cores, programs, version, auth, submit_periodic, periodic, cancel_periodic, other
};
inline constexpr std::size_t op_count = static_cast<std::size_t>(op::other) + 1;
[[nodiscard]] std::string_view to_string(op o) noexcept;
// The op named s, or op::other.
[[nodiscard]] op parse_op(std::string_view s) noexcept;

// Error codes of the protocol, plus `internal` (an extension: an exception
// the server did not expect; never sent by a correct server).
inline constexpr std::size_t error_code_count = 8;
inline constexpr std::string_view internal_error = "internal";

// Cumulative Prometheus-style histogram of flow times, per program.
class flow_histograms {
 public:
  // Upper bounds in seconds; the last bucket is +Inf.
  static constexpr std::array<double, 18> bounds{1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2,
                                                 0.1,  0.25,   0.5,  1,    2.5,    5,    10,   30,     60};
  struct histogram {
    std::array<std::uint64_t, bounds.size() + 1> buckets{};  // per bucket, not cumulative
    std::uint64_t count = 0;
    double sum_s = 0;
  };
  void observe(const std::string& program, std::string_view state, double flow_s);
  // (program, state) -> histogram, copied under the lock.
  [[nodiscard]] std::map<std::pair<std::string, std::string>, histogram> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, histogram> by_program_state_;
};

class service {
 public:
  explicit service(job_server& srv);
  service(const service&) = delete;
  service& operator=(const service&) = delete;

  [[nodiscard]] job_server& jobs() noexcept { return srv_; }
  [[nodiscard]] const std::shared_ptr<flow_histograms>& histograms() const noexcept { return histograms_; }

  void count_request(op o) noexcept;
  void count_error(std::string_view code) noexcept;
  [[nodiscard]] std::uint64_t requests(op o) const noexcept;
  // (code, count) for every code, in the protocol's order.
  [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> errors() const;

  // The runtime's worker count, for the version reply (0 = not said).
  unsigned workers = 0;
  // Open connections (the front end counts them).
  std::atomic<std::int64_t> connections{0};
  std::atomic<std::uint64_t> connections_total{0};
  std::atomic<std::uint64_t> connections_refused{0};
  std::atomic<std::uint64_t> connections_timed_out{0};  // no token within the grace period
  // Gauges the front end keeps: reply bytes it holds for connections
  // (held for ordering, not taken, or not yet written) and connections it
  // does not read because they reached a bound (backpressure).
  std::atomic<std::int64_t> buffered_bytes{0};
  std::atomic<std::int64_t> connections_reading_paused{0};

 private:
  job_server& srv_;
  std::shared_ptr<flow_histograms> histograms_;
  std::array<std::atomic<std::uint64_t>, op_count> requests_{};
  std::array<std::atomic<std::uint64_t>, error_code_count> errors_{};
};

}  // namespace promptly::server::protocol
