// Mean and percentiles of a sample of latencies (nearest-rank percentiles), shared by the
// server's compress times and the driver's request times.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

namespace email {

struct latency_summary {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
};

inline latency_summary summarize(std::vector<double> v) {
  latency_summary s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(std::ceil(q * v.size())) - (q > 0 ? 1 : 0))]; };
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.p50 = rank(0.50);
  s.p95 = rank(0.95);
  s.p99 = rank(0.99);
  s.max = v.back();
  return s;
}

}  // namespace email
