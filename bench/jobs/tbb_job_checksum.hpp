// The oneTBB peers' job body (suite `jobs`): a job's checksum, the wrapping sum of its pieces of
// `piece` units (the last one shorter), as tbb::parallel_reduce over the pieces with grain 1 and
// simple_partitioner: halving down to one piece, like Promptly's program. Shared by the
// arena-per-job program and the process-per-job child.
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/partitioner.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "jobs_common.hpp"

namespace jobs {

inline std::uint64_t tbb_job_checksum(std::uint64_t units, std::uint64_t piece, std::uint64_t seed) {
  const std::uint64_t pieces = (units + piece - 1) / piece;
  return tbb::parallel_reduce(
      tbb::blocked_range<std::uint64_t>(0, pieces, 1), std::uint64_t{0},
      [&](const tbb::blocked_range<std::uint64_t>& r, std::uint64_t acc) {
        for (std::uint64_t k = r.begin(); k != r.end(); ++k)
          acc += bing_piece(k * piece, std::min(units, (k + 1) * piece), seed);
        return acc;
      },
      std::plus<>{}, tbb::simple_partitioner{});
}

}  // namespace jobs
