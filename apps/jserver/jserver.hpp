// The job server: four job types, each released by its own Poisson arrival process and run at
// its priority (smallest work first: mm > fib > sort > sw), with the arrival generators at the
// top priority (the job server of the I-Cilk paper, SPAA 2020, Sec. 5.2).
//
// run_jserver sets one arrival rate for every type, rate = load * workers / sum(serial work),
// so that the offered utilisation of the runtime's workers is `load`, releases jobs for
// `duration` and waits for every released job. Latency is release (the arrival instant of the
// Poisson schedule) to finish. Every job's answer is checked against the serial reference.
#pragma once

#include <chrono>
#include <cstdint>

#include <promptly/promptly.hpp>

#include "workload.hpp"

namespace jserver {

struct jserver_options {
  double load = 0.7;                         // offered utilisation of the runtime's workers
  std::chrono::milliseconds duration{4000};  // releases happen in [0, duration)
  std::uint64_t seed = 1;
  job_sizes sizes{};
};

// Throws std::invalid_argument for a load <= 0 or a duration <= 0, std::out_of_range if `rt`
// has fewer than order::size levels.
jserver_report run_jserver(promptly::runtime& rt, const jserver_options& options);

}  // namespace jserver
