// The job server: four job types, each released by its own Poisson arrival process and run at
// its priority (smallest work first: mm > fib > sort > sw), with the arrival generators at the
// top priority (the job server of the I-Cilk paper, SPAA 2020, Sec. 5.2).
//
// run_jserver measures each type's serial work W once (its serial reference, median of 3 on
// the calling thread), sets one arrival rate for every type, rate = load * workers / sum(W), so
// that the offered utilisation of the machine is `load`, then releases jobs for `duration` and
// waits for every released job. Latency is release (the arrival instant of the Poisson
// schedule) to finish. Every job's answer is checked against the serial reference.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <promptly/promptly.hpp>

namespace jserver {

// Sizes scaled to a 2-core machine (the paper: mm n = 1024, fib(36), sort 1.1e7, sw n = 1024 on
// 20 cores); README.md gives the measured serial work of each.
struct job_sizes {
  std::size_t mm_n = 128, mm_base = 32;
  int fib_n = 30, fib_cutoff = 16;
  std::size_t sort_n = 150'000, sort_base = 2048;
  std::size_t sw_n = 2048, sw_block = 64;
};

struct jserver_options {
  double load = 0.7;                        // offered utilisation of `rt`'s workers
  std::chrono::milliseconds duration{4000};  // releases happen in [0, duration)
  std::uint64_t seed = 1;
  job_sizes sizes{};
};

inline constexpr std::array<const char*, 4> type_names{"mm", "fib", "sort", "sw"};

struct type_report {
  double work_us = 0;   // serial work of one job
  double rate_per_s = 0;
  std::vector<double> latency_us;  // one per finished job, release to finish
};

struct jserver_report {
  std::array<type_report, 4> types;
  double elapsed_s = 0;          // first release to last finish
  double offered_load = 0;       // sum over types of rate * work / workers
  std::uint64_t wrong_answers = 0;
};

// Throws std::invalid_argument for a load <= 0 or a duration <= 0, std::out_of_range if `rt`
// has fewer than order::size levels.
jserver_report run_jserver(promptly::runtime& rt, const jserver_options& options);

}  // namespace jserver
