// Job size estimates (size_estimator.hpp states the rules and invariants).
#include "size_estimator.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "promptly/server/job_server.hpp"
#include "promptly/stats.hpp"

namespace promptly::server::detail {

const char* to_string(size_source s) noexcept {
  switch (s) {
    case size_source::hint: return "hint";
    case size_source::bucket: return "bucket";
    case size_source::program: return "program";
    case size_source::prior: return "prior";
  }
  return "prior";
}

double size_estimator::checked_hint_ms(double hint_ms) {
  if (!std::isfinite(hint_ms) || !(hint_ms > 0) || hint_ms > max_hint_ms) {
    std::ostringstream m;
    m << "size_hint must be a finite number of milliseconds in (0, " << max_hint_ms << "], got ";
    if (std::isnan(hint_ms))
      m << "NaN";
    else
      m << hint_ms;
    throw error(error_code::bad_args, m.str());
  }
  return hint_ms;
}

namespace {

std::string log2_class(double x) {
  if (x == 0 || !std::isfinite(x)) return x == 0 ? "0" : "inf";
  const int k = static_cast<int>(std::floor(std::log2(std::fabs(x))));
  std::string out = x < 0 ? "-" : "";  // appended, not operator+: GCC 12 warns on that (-Wrestrict, a false positive)
  out += std::to_string(k);
  return out;
}

}  // namespace

std::string size_estimator::argument_bucket(const nlohmann::json& args) {
  if (!args.is_object()) return "";
  std::string out;
  for (const auto& [k, v] : args.items()) {  // nlohmann's object keeps keys sorted
    if (!out.empty()) out += ',';
    out += k;
    if (v.is_number())
      out += '~' + log2_class(v.get<double>());
    else if (v.is_string())
      out += '=' + v.get<std::string>().substr(0, 32);
    else if (v.is_boolean())
      out += v.get<bool>() ? "=true" : "=false";
    else if (v.is_array() || v.is_object())
      out += '#' + log2_class(static_cast<double>(v.size()));
  }
  return out;
}

void size_estimator::add(mean& m, double x) noexcept {
  if (m.n >= memory) m.sum -= m.sum / static_cast<double>(m.n);  // decay: the oldest weigh less
  else ++m.n;
  m.sum += x;
}

size_estimate size_estimator::estimate(const std::string& program, const nlohmann::json& args,
                                       const double* hint_ms) const {
  size_estimate e;
  e.program = program;
  e.bucket = argument_bucket(args);
  if (hint_ms != nullptr) {
    e.expected_s = *hint_ms / 1e3;
    e.source = size_source::hint;
    return e;
  }
  std::lock_guard lock(mu_);
  if (auto b = buckets_.find(program + '\n' + e.bucket); b != buckets_.end() && b->second.n > 0) {
    e.expected_s = b->second.value();
    e.source = size_source::bucket;
  } else if (auto p = programs_.find(program); p != programs_.end() && p->second.n > 0) {
    e.expected_s = p->second.value();
    e.source = size_source::program;
  } else {
    e.expected_s = all_.n > 0 ? all_.value() : default_prior_s;
    e.source = size_source::prior;
  }
  e.expected_s = std::max(e.expected_s, min_estimate_s);
  return e;
}

void size_estimator::observe(const size_estimate& e, double measured_s) {
  if (!std::isfinite(measured_s) || measured_s < 0) return;
  std::lock_guard lock(mu_);
  add(buckets_[e.program + '\n' + e.bucket], measured_s);
  add(programs_[e.program], measured_s);
  add(all_, measured_s);
  const double actual = std::max(measured_s, min_estimate_s);
  const double predicted = std::max(e.expected_s, min_estimate_s);
  error_counts& c = errors_[static_cast<int>(e.source)];
  ++c.n;
  c.abs_rel += std::fabs(predicted - actual) / actual;
  c.abs_log2 += std::fabs(std::log2(predicted / actual));
  c.expected_s += e.expected_s;
  c.measured_s += measured_s;
}

void size_estimator::job_ended(const promptly::runtime& rt, std::uint32_t pool, const size_estimate& e) {
  board_->erase(pool);
  if (rt.policy() != "serpt") return;
  // One pool's work, not runtime::stats(): that walks every pool under the
  // policy's lock, and read at each job's end it starved serpt's decisions
  // once hundreds of jobs were queued (bench/results/jobs/serpt/README.md).
  try {
    observe(e, rt.stats(promptly::pool(pool)).work_s);
  } catch (const std::out_of_range&) {
    // The pool is gone (only the reaper removes a job's pool, after this):
    // nothing measured, nothing learned.
  }
}

void install_policy(promptly::runtime& rt, const std::string& name, size_estimator& sizes) {
  if (name == "serpt")
    rt.set_policy(policy_impl::make_serpt_policy({}, sizes.board()));
  else
    rt.set_policy(name);
}

nlohmann::json size_estimator::stats() const {
  std::lock_guard lock(mu_);
  nlohmann::json sources = nlohmann::json::object();
  std::uint64_t jobs = 0;
  for (int s = 0; s < 4; ++s) {
    const error_counts& c = errors_[s];
    jobs += c.n;
    const double n = c.n > 0 ? static_cast<double>(c.n) : 1.0;
    sources[to_string(static_cast<size_source>(s))] = {
        {"jobs", c.n},
        {"mean_abs_rel_error", c.abs_rel / n},
        {"mean_abs_log2_error", c.abs_log2 / n},
        {"expected_s", c.expected_s},
        {"measured_s", c.measured_s}};
  }
  nlohmann::json programs = nlohmann::json::object();
  for (const auto& [name, m] : programs_) programs[name] = {{"mean_s", m.value()}};
  return {{"jobs", jobs},
          {"prior_s", all_.n > 0 ? all_.value() : default_prior_s},
          {"sources", std::move(sources)},
          {"buckets", buckets_.size()},
          {"programs", std::move(programs)}};
}

}  // namespace promptly::server::detail
