#include "workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

namespace jserver {
using clock_type = std::chrono::steady_clock;

namespace {
template <class F>
double median_us(F&& f) {
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) {
    auto t0 = clock_type::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

struct summary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
summary summarize(std::vector<double> v) {
  summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(std::ceil(q * v.size())) - 1)]; };
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  s.p50 = rank(0.5), s.p90 = rank(0.9), s.p95 = rank(0.95), s.p99 = rank(0.99), s.max = v.back();
  return s;
}
}  // namespace

std::shared_ptr<const workload> prepare_workload(const job_sizes& z, std::uint64_t seed) {
  auto w = std::make_shared<workload>();
  w->z = z;
  w->a = random_matrix(z.mm_n, seed);
  w->b = random_matrix(z.mm_n, seed + 1);
  w->unsorted = random_longs(z.sort_n, seed + 2);
  w->x = random_dna(z.sw_n, seed + 3);
  w->y = random_dna(z.sw_n, seed + 4);
  w->work_us[0] = median_us([&] { w->mm_answer = multiply_serial(w->a, w->b); });
  w->work_us[1] = median_us([&] { w->fib_answer = fib_serial(z.fib_n); });
  w->work_us[2] = median_us([&] {
    std::vector<long> v = w->unsorted;
    std::sort(v.begin(), v.end());
    w->sort_answer = sorted_checksum(v);
  });
  w->work_us[3] = median_us([&] { w->sw_answer = smith_waterman_serial(w->x, w->y); });
  return w;
}

double arrival_rate(const workload& w, double load, unsigned workers) {
  double total_s = 0;
  for (double us : w.work_us) total_s += us / 1e6;
  return load * workers / total_s;
}

std::vector<clock_type::time_point> poisson_arrivals(double rate, std::uint64_t seed, clock_type::time_point start,
                                                     clock_type::time_point end) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<clock_type::time_point> out;
  for (auto t = start;;) {
    t += std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(gap(rng)));
    if (t >= end) return out;
    out.push_back(t);
  }
}

namespace {
bool write_samples(const jserver_report& r, const std::string& path) {
  std::error_code ec;
  if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty()) std::filesystem::create_directories(dir, ec);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "jserver: cannot write --samples-out '%s'\n", path.c_str());
    return false;
  }
  std::fputc('{', f);
  for (std::size_t t = 0; t < 4; ++t) {
    std::fprintf(f, "%s\"%s\": [", t == 0 ? "" : ", ", type_names[t]);
    const auto& v = r.types[t].latency_us;
    for (std::size_t i = 0; i < v.size(); ++i) std::fprintf(f, "%s%.1f", i == 0 ? "" : ",", v[i]);
    std::fputc(']', f);
  }
  std::fputs("}\n", f);
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::fprintf(stderr, "jserver: writing --samples-out '%s' failed\n", path.c_str());
    return false;
  }
  return true;
}
}  // namespace

int print_report(const jserver_report& r, const std::string& what, const std::string& samples_out) {
  std::fprintf(stderr, "jserver: %s, offered load %.0f%%, %.2f s\n", what.c_str(), r.offered_load * 100, r.elapsed_s);
  std::size_t jobs = 0;
  std::string metrics;
  char buf[600];
  double mm_mean_s = 0;
  for (std::size_t t = 0; t < 4; ++t) {
    const auto& tr = r.types[t];
    const auto s = summarize(tr.latency_us);
    jobs += tr.latency_us.size();
    const char* n = type_names[t];
    std::fprintf(stderr,
                 "  %-4s work %8.0f us  rate %6.2f/s  jobs %4zu  mean %9.0f us  p50 %9.0f  p90 %9.0f  p95 %9.0f  "
                 "p99 %9.0f  max %9.0f\n",
                 n, tr.work_us, tr.rate_per_s, tr.latency_us.size(), s.mean, s.p50, s.p90, s.p95, s.p99, s.max);
    std::snprintf(buf, sizeof buf,
                  ", \"%s_us_mean\": %.1f, \"%s_us_p50\": %.1f, \"%s_us_p90\": %.1f, \"%s_us_p95\": %.1f, "
                  "\"%s_us_p99\": %.1f, \"%s_us_max\": %.1f, \"%s_throughput_per_s\": %.3f, \"%s_work_us\": %.1f",
                  n, s.mean, n, s.p50, n, s.p90, n, s.p95, n, s.p99, n, s.max, n,
                  static_cast<double>(tr.latency_us.size()) / r.elapsed_s, n, tr.work_us);
    metrics += buf;
    if (t == 0) mm_mean_s = s.mean / 1e6;
  }
  if (!samples_out.empty() && !write_samples(r, samples_out)) return 1;
  if (r.wrong_answers > 0) {
    std::fprintf(stderr, "jserver: %llu jobs computed a wrong answer\n", static_cast<unsigned long long>(r.wrong_answers));
    return 1;
  }
  std::printf("RESULT {\"result\": \"ok\", \"metrics\": {\"region_s\": %.9g%s, \"throughput_per_s\": %.3f, "
              "\"offered_load\": %.3f, \"jobs\": %zu}}\n",
              mm_mean_s, metrics.c_str(), static_cast<double>(jobs) / r.elapsed_s, r.offered_load, jobs);
  return 0;
}

}  // namespace jserver
