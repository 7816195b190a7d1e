// sample_window: the last `capacity` samples of one quantity (flow times,
// start and remove latencies) and their mean / p50 / p99 / max, for the
// runtime-information subscription (AMCilk Sec. 4.1) and stats().
//
// Invariants
//  * buf_ holds min(added, capacity) samples; next_ is where the next one
//    goes, so once full the oldest sample is overwritten first.
//  * Not synchronized: the owner (job_server::state) guards it with its mutex.
#pragma once

#include <cstddef>
#include <vector>

#include "promptly/server/job_server.hpp"

namespace promptly::server::detail {

class sample_window {
 public:
  explicit sample_window(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  void add(double x);
  // Nearest-rank percentiles over the samples held now (zeros if none).
  [[nodiscard]] latency_summary summary() const;

 private:
  std::size_t capacity_;
  std::size_t next_ = 0;
  std::vector<double> buf_;
};

}  // namespace promptly::server::detail
