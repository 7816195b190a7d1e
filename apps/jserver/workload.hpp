// What a job server run needs besides a runtime, shared by the Promptly job server and its
// oneTBB peer: the inputs every job reads, the answers the serial references give, each type's
// serial work, the arrival rate for a load, the Poisson arrival schedule, and the report.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels.hpp"

namespace jserver {

// Sizes scaled to a 2-core machine (the paper: mm n = 1024, fib(36), sort 1.1e7, sw n = 1024 on
// 20 cores); README.md gives the measured serial work of each.
struct job_sizes {
  std::size_t mm_n = 128, mm_base = 32;
  int fib_n = 30, fib_cutoff = 16;
  std::size_t sort_n = 150'000, sort_base = 2048;
  std::size_t sw_n = 2048, sw_block = 64;
};

inline constexpr std::array<const char*, 4> type_names{"mm", "fib", "sort", "sw"};

struct workload {
  job_sizes z;
  matrix a, b;
  std::vector<long> unsorted;
  std::vector<char> x, y;
  double mm_answer = 0;
  long fib_answer = 0;
  std::uint64_t sort_answer = 0;
  int sw_answer = 0;
  std::array<double, 4> work_us{};  // serial work of one job per type (median of 3)
};

// Generates the inputs and runs each serial reference 3 times on the calling thread.
std::shared_ptr<const workload> prepare_workload(const job_sizes& z, std::uint64_t seed);

// One rate for every type such that the offered utilisation of `workers` is `load`.
double arrival_rate(const workload& w, double load, unsigned workers);

// A Poisson process of `rate` per second from `start`: the arrival instants before `end`.
std::vector<std::chrono::steady_clock::time_point> poisson_arrivals(double rate, std::uint64_t seed,
                                                                     std::chrono::steady_clock::time_point start,
                                                                     std::chrono::steady_clock::time_point end);

struct type_report {
  double work_us = 0;
  double rate_per_s = 0;
  std::vector<double> latency_us;  // one per finished job, release to finish
};

struct jserver_report {
  std::array<type_report, 4> types;
  double elapsed_s = 0;     // first possible release to last finish
  double offered_load = 0;  // sum over types of rate * work / workers
  std::uint64_t wrong_answers = 0;
};

// The summary on stderr and the RESULT line of the benchmark protocol (bench/README.md) on
// stdout; with `samples_out`, every job's latency too, as JSON {"mm": [us...], "fib", "sort",
// "sw"} (0.1 us, the RESULT line's rounding, so its nearest-rank quantiles are the reported
// ones). Returns the exit status (1 if a job computed a wrong answer or the samples could not
// be written).
int print_report(const jserver_report& r, const std::string& what, const std::string& samples_out = "");

}  // namespace jserver
