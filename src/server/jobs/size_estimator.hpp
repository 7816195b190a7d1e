// Job size estimates for the `serpt` policy (docs/job-policies.md, "serpt"):
// each job's expected work, in worker-seconds, from (first that applies)
//  1. the client's hint (submit_options::size_hint_ms, protocol `size_hint`);
//  2. the mean measured work of the completed jobs of the same program and
//     argument bucket (argument_bucket);
//  3. the mean measured work of the program's completed jobs;
//  4. the prior: the mean measured work of every completed job, or
//     default_prior_s before any job completed.
// Learned online: each completed job's measured work (its pool's work_s, the
// runtime's per-pool work time) updates its bucket's and program's means,
// and the error of the estimate it ran with is counted per source.
//
// The estimates reach the policy through a size_board (src/policy/serpt.hpp)
// keyed by the job's pool: set when the pool is made, erased when it goes.
//
// Invariants
//  * Every member is guarded by mu_: submit threads, the starting thread and
//    the reaper call in concurrently.
//  * Means are of finite, non-negative measurements only; an estimate is
//    finite and > 0 (a zero measurement is floored at min_estimate_s).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "../../policy/serpt.hpp"  // promptly_server does not see src/ as an include root
#include "promptly/runtime.hpp"

namespace promptly::server::detail {

enum class size_source : std::uint8_t { hint, bucket, program, prior };
const char* to_string(size_source s) noexcept;

struct size_estimate {
  double expected_s = 0;
  size_source source = size_source::prior;
  std::string program;
  std::string bucket;  // argument_bucket(program, args)
};

class size_estimator {
 public:
  static constexpr double default_prior_s = 0.010;  // 10 ms of one core, before any job completed
  static constexpr double min_estimate_s = 1e-6;
  // The largest hint taken: one day of one core's work.
  static constexpr double max_hint_ms = 86'400'000.0;

  // Throws server::error{bad_args} naming the value for a hint that is not
  // a finite number in (0, max_hint_ms].
  static double checked_hint_ms(double hint_ms);

  // The bucket of a job's arguments: each top-level argument, in key order,
  // as name=value for strings (first 32 characters) and booleans, and
  // name~k for numbers, k = floor(log2 |x|) (x = 0: "0"; negative: "-k"),
  // so that jobs whose sizes scale with a numeric argument share a bucket
  // within a factor of 2; arrays and objects by log2 of their size.
  static std::string argument_bucket(const nlohmann::json& args);

  size_estimate estimate(const std::string& program, const nlohmann::json& args, const double* hint_ms) const;
  // A job ended having done `measured_s` of work: learn it and count the
  // error of `e`. A measurement that is not finite or is negative is ignored.
  void observe(const size_estimate& e, double measured_s);

  // {"jobs": n, "prior_s", "sources": {source: {"jobs", "mean_abs_rel_error", "mean_abs_log2_error"}},
  //  "buckets": count, "programs": {name: {"mean_s"}}}
  nlohmann::json stats() const;

  const std::shared_ptr<policy_impl::size_board>& board() const noexcept { return board_; }

  // The job in pool `pool` ended (its pool not yet removed): its entry
  // leaves the board, and, while `rt` runs serpt, its pool's measured work
  // (runtime::stats, a snapshot: taken only when the estimates are in use)
  // is learned.
  void job_ended(const promptly::runtime& rt, std::uint32_t pool, const size_estimate& e);

 private:
  struct mean {
    std::uint64_t n = 0;
    double sum = 0;
    double value() const noexcept { return n > 0 ? sum / static_cast<double>(n) : 0.0; }
  };
  struct error_counts {
    std::uint64_t n = 0;
    double abs_rel = 0, abs_log2 = 0;
    // Totals, so that the ratio shows a bias the absolute errors hide.
    double expected_s = 0, measured_s = 0;
  };
  // Learning weights the recent: past this many jobs a mean decays (its
  // count stays there), so that a program whose jobs change follows them.
  static constexpr std::uint64_t memory = 64;
  static void add(mean& m, double x) noexcept;

  mutable std::mutex mu_;
  std::map<std::string, mean, std::less<>> buckets_;   // key: program + '\n' + bucket
  std::map<std::string, mean, std::less<>> programs_;
  mean all_;
  error_counts errors_[4];
  std::shared_ptr<policy_impl::size_board> board_ = std::make_shared<policy_impl::size_board>();
};

// Switches `rt` to policy `name`; "serpt" gets the estimator's size board
// (by name alone it would have none).
void install_policy(promptly::runtime& rt, const std::string& name, size_estimator& sizes);

}  // namespace promptly::server::detail
