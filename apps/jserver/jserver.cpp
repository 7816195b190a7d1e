#include "jserver.hpp"

#include <algorithm>
#include <memory>
#include <random>
#include <stdexcept>

#include <promptly/io.hpp>

#include "kernels.hpp"
#include "priorities.hpp"

namespace jserver {
namespace io = promptly::io;
namespace pt = promptly::typed;
using clock_type = std::chrono::steady_clock;

namespace {

// Inputs shared (read-only) by every job of a run, and the answers the serial references gave.
struct inputs {
  job_sizes z;
  matrix a, b;
  double mm_answer = 0;
  long fib_answer = 0;
  std::vector<long> unsorted;
  std::uint64_t sort_answer = 0;
  std::vector<char> x, y;
  int sw_answer = 0;
};

struct finished_job {
  double latency_us;
  bool correct;
};

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

double since_us(clock_type::time_point release) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - release).count();
}

// The job bodies: one per type, each at its own priority.
finished_job mm_job(ctx<prio::mm>, std::shared_ptr<const inputs> in, clock_type::time_point release) {
  bool ok = multiply(in->a, in->b, in->z.mm_base) == in->mm_answer;
  return {since_us(release), ok};
}
finished_job fib_job(ctx<prio::fib>, std::shared_ptr<const inputs> in, clock_type::time_point release) {
  bool ok = jserver::fib(in->z.fib_n, in->z.fib_cutoff) == in->fib_answer;
  return {since_us(release), ok};
}
finished_job sort_job(ctx<prio::sort>, std::shared_ptr<const inputs> in, clock_type::time_point release) {
  std::vector<long> v = in->unsorted;
  bool ok = cilksort(v, in->z.sort_base) == in->sort_answer;
  return {since_us(release), ok};
}
finished_job sw_job(ctx<prio::sw>, std::shared_ptr<const inputs> in, clock_type::time_point release) {
  bool ok = smith_waterman(in->x, in->y, in->z.sw_block) == in->sw_answer;
  return {since_us(release), ok};
}

// One type's arrival process: exponential gaps of mean 1/rate from `start`, releases until
// `end`; returns the released jobs' futures (the admin task touches them).
template <class Q, class Body>
std::vector<pt::future<finished_job, Q>> generate(ctx<prio::generator> c, Body body, std::shared_ptr<const inputs> in,
                                                  double rate, std::uint64_t seed, clock_type::time_point start,
                                                  clock_type::time_point end) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<pt::future<finished_job, Q>> jobs;
  auto t = start;
  for (;;) {
    t += std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(gap(rng)));
    if (t >= end) break;
    io::sleep_until(t).get();
    jobs.push_back(pt::fcreate<Q>(c, body, in, t));
  }
  return jobs;
}

template <class Q>
void collect(ctx<prio::admin> c, std::vector<pt::future<finished_job, Q>>& jobs, type_report& r, std::uint64_t& wrong,
             clock_type::time_point& last) {
  for (auto& j : jobs) {
    const finished_job& f = c.touch(j);  // every job type is more urgent than admin
    r.latency_us.push_back(f.latency_us);
    if (!f.correct) ++wrong;
  }
  last = std::max(last, clock_type::now());
}

}  // namespace

jserver_report run_jserver(promptly::runtime& rt, const jserver_options& o) {
  if (!(o.load > 0)) throw std::invalid_argument("jserver: load must be positive");
  if (o.duration.count() <= 0) throw std::invalid_argument("jserver: duration must be positive");
  auto in = std::make_shared<inputs>();
  in->z = o.sizes;
  in->a = random_matrix(o.sizes.mm_n, o.seed);
  in->b = random_matrix(o.sizes.mm_n, o.seed + 1);
  in->unsorted = random_longs(o.sizes.sort_n, o.seed + 2);
  in->x = random_dna(o.sizes.sw_n, o.seed + 3);
  in->y = random_dna(o.sizes.sw_n, o.seed + 4);

  jserver_report rep;
  rep.types[0].work_us = median_us([&] { in->mm_answer = multiply_serial(in->a, in->b); });
  rep.types[1].work_us = median_us([&] { in->fib_answer = fib_serial(o.sizes.fib_n); });
  rep.types[2].work_us = median_us([&] {
    std::vector<long> v = in->unsorted;
    std::sort(v.begin(), v.end());
    in->sort_answer = sorted_checksum(v);
  });
  rep.types[3].work_us = median_us([&] { in->sw_answer = smith_waterman_serial(in->x, in->y); });

  double total_work_s = 0;
  for (auto& t : rep.types) total_work_s += t.work_us / 1e6;
  const double workers = static_cast<double>(rt.config().workers);
  const double rate = o.load * workers / total_work_s;
  for (auto& t : rep.types) t.rate_per_s = rate;
  rep.offered_load = rate * total_work_s / workers;

  std::shared_ptr<const inputs> shared = in;
  const auto start = clock_type::now() + std::chrono::milliseconds(20);
  const auto end = start + o.duration;
  clock_type::time_point last = start;
  pt::run<order, prio::admin>(rt, [&](ctx<prio::admin> c) {
    auto g_mm = pt::fcreate<prio::generator>(c, [&](ctx<prio::generator> g) { return generate<prio::mm>(g, mm_job, shared, rate, o.seed * 4 + 0, start, end); });
    auto g_fib = pt::fcreate<prio::generator>(c, [&](ctx<prio::generator> g) { return generate<prio::fib>(g, fib_job, shared, rate, o.seed * 4 + 1, start, end); });
    auto g_sort = pt::fcreate<prio::generator>(c, [&](ctx<prio::generator> g) { return generate<prio::sort>(g, sort_job, shared, rate, o.seed * 4 + 2, start, end); });
    auto g_sw = pt::fcreate<prio::generator>(c, [&](ctx<prio::generator> g) { return generate<prio::sw>(g, sw_job, shared, rate, o.seed * 4 + 3, start, end); });
    auto mm_jobs = c.touch(std::move(g_mm));
    auto fib_jobs = c.touch(std::move(g_fib));
    auto sort_jobs = c.touch(std::move(g_sort));
    auto sw_jobs = c.touch(std::move(g_sw));
    collect(c, mm_jobs, rep.types[0], rep.wrong_answers, last);
    collect(c, fib_jobs, rep.types[1], rep.wrong_answers, last);
    collect(c, sort_jobs, rep.types[2], rep.wrong_answers, last);
    collect(c, sw_jobs, rep.types[3], rep.wrong_answers, last);
  });
  rep.elapsed_s = std::chrono::duration<double>(last - start).count();
  return rep;
}

}  // namespace jserver
