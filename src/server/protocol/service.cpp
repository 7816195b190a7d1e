#include "server/protocol/service.hpp"

#include <algorithm>

namespace promptly::server::protocol {

namespace {
constexpr std::array<std::string_view, op_count> op_names{
    "submit", "wait", "status", "cancel", "jobs", "stats", "subscribe", "unsubscribe",
    "set_policy", "set_cores", "programs", "version", "auth", "submit_periodic", "periodic", "cancel_periodic",
    "other"};
// The protocol's codes in error_code order, then the internal extension.
constexpr std::array<std::string_view, error_code_count> code_names{
    "bad_request", "unknown_op", "unknown_program", "bad_args", "unknown_job", "rejected", "not_allowed",
    internal_error};
}  // namespace

std::string_view to_string(op o) noexcept { return op_names[static_cast<std::size_t>(o)]; }

op parse_op(std::string_view s) noexcept {
  for (std::size_t i = 0; i + 1 < op_count; ++i)
    if (op_names[i] == s) return static_cast<op>(i);
  return op::other;
}

void flow_histograms::observe(const std::string& program, std::string_view state, double flow_s) {
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), flow_s);
  const auto bucket = static_cast<std::size_t>(it - bounds.begin());
  std::lock_guard lock(mu_);
  auto& h = by_program_state_[{program, std::string(state)}];
  ++h.buckets[bucket];
  ++h.count;
  h.sum_s += flow_s;
}

std::map<std::pair<std::string, std::string>, flow_histograms::histogram> flow_histograms::snapshot() const {
  std::lock_guard lock(mu_);
  return by_program_state_;
}

service::service(job_server& srv) : srv_(srv), histograms_(std::make_shared<flow_histograms>()) {}

// Counters are statistics read by the metrics thread: no ordering with
// other memory is needed, so relaxed increments and loads.
void service::count_request(op o) noexcept {
  requests_[static_cast<std::size_t>(o)].fetch_add(1, std::memory_order_relaxed);
}

void service::count_error(std::string_view code) noexcept {
  for (std::size_t i = 0; i < code_names.size(); ++i)
    if (code_names[i] == code) {
      errors_[i].fetch_add(1, std::memory_order_relaxed);  // statistics only
      return;
    }
}

std::uint64_t service::requests(op o) const noexcept {
  return requests_[static_cast<std::size_t>(o)].load(std::memory_order_relaxed);  // statistics only
}

std::vector<std::pair<std::string, std::uint64_t>> service::errors() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (std::size_t i = 0; i < code_names.size(); ++i)
    out.emplace_back(std::string(code_names[i]), errors_[i].load(std::memory_order_relaxed));  // statistics only
  return out;
}

}  // namespace promptly::server::protocol
