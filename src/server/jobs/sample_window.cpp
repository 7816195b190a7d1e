// Sliding-window summaries; see sample_window.hpp for the invariants.
#include "sample_window.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace promptly::server::detail {

void sample_window::add(double x) {
  if (buf_.size() < capacity_) {
    buf_.push_back(x);
  } else {
    buf_[next_] = x;
  }
  next_ = (next_ + 1) % capacity_;
}

latency_summary sample_window::summary() const {
  latency_summary s;
  s.samples = buf_.size();
  if (buf_.empty()) return s;
  std::vector<double> v(buf_);
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest sample with at least q of the samples at or below it.
  auto rank = [&](double q) {
    const auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(r, 1, v.size()) - 1];
  };
  s.mean_us = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.p50_us = rank(0.50);
  s.p99_us = rank(0.99);
  s.max_us = v.back();
  return s;
}

}  // namespace promptly::server::detail
