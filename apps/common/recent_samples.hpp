// The last `capacity` samples of one quantity (a server's task times), for the statistics a
// long-running server reports: memory stays bounded, and a STATS request copies at most
// `capacity` values, whatever the uptime. The percentiles then describe the most recent
// samples (a benchmark run takes far fewer than the default capacity, so for it they are
// exact). Like the job server's sample window; that one is the runtime's, this one the apps'.
//
// Invariant: values() holds min(samples added since clear(), capacity) values; once full, each
// add() overwrites the oldest. Not synchronized: the owner guards it.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace apps {

class recent_samples {
 public:
  static constexpr std::size_t default_capacity = 65536;

  explicit recent_samples(std::size_t capacity = default_capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("apps::recent_samples: capacity must be at least 1");
  }
  void add(double x) {
    if (values_.size() < capacity_) {
      values_.push_back(x);
      return;
    }
    values_[oldest_] = x;
    oldest_ = (oldest_ + 1) % capacity_;
  }
  // The samples held, in no particular order.
  const std::vector<double>& values() const noexcept { return values_; }
  void clear() noexcept {
    values_.clear();
    oldest_ = 0;
  }

 private:
  std::size_t capacity_;
  std::size_t oldest_ = 0;  // once full: the slot the next add() overwrites
  std::vector<double> values_;
};

}  // namespace apps
