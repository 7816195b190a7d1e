#include "jserver.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <promptly/io.hpp>

#include "kernels.hpp"
#include "priorities.hpp"

namespace jserver {
namespace io = promptly::io;
namespace pt = promptly::typed;
using clock_type = std::chrono::steady_clock;

namespace {

struct finished_job {
  double latency_us;
  bool correct;
};

using input = std::shared_ptr<const workload>;

double since_us(clock_type::time_point release) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - release).count();
}

// The job bodies: one per type, each at its own priority.
finished_job mm_job(ctx<prio::mm>, input w, clock_type::time_point release) {
  bool ok = multiply(w->a, w->b, w->z.mm_base) == w->mm_answer;
  return {since_us(release), ok};
}
finished_job fib_job(ctx<prio::fib>, input w, clock_type::time_point release) {
  bool ok = fib(w->z.fib_n, w->z.fib_cutoff) == w->fib_answer;
  return {since_us(release), ok};
}
finished_job sort_job(ctx<prio::sort>, input w, clock_type::time_point release) {
  std::vector<long> v = w->unsorted;
  bool ok = cilksort(v, w->z.sort_base) == w->sort_answer;
  return {since_us(release), ok};
}
finished_job sw_job(ctx<prio::sw>, input w, clock_type::time_point release) {
  bool ok = smith_waterman(w->x, w->y, w->z.sw_block) == w->sw_answer;
  return {since_us(release), ok};
}

// One type's arrival process: sleeps (an I/O timer future: the worker runs jobs meanwhile) until
// each arrival instant and creates the job; returns the jobs' futures (admin touches them).
template <class Q, class Body>
std::vector<pt::future<finished_job, Q>> generate(ctx<prio::generator> c, Body body, input w,
                                                  std::vector<clock_type::time_point> arrivals) {
  std::vector<pt::future<finished_job, Q>> jobs;
  for (auto t : arrivals) {
    io::sleep_until(t).get();
    jobs.push_back(pt::fcreate<Q>(c, body, w, t));
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
  const input w = prepare_workload(o.sizes, o.seed);
  const unsigned workers = rt.config().workers;
  const double rate = arrival_rate(*w, o.load, workers);
  jserver_report rep;
  for (std::size_t t = 0; t < 4; ++t) rep.types[t] = {w->work_us[t], rate, {}};
  rep.offered_load = o.load;

  const auto start = clock_type::now() + std::chrono::milliseconds(20);
  const auto end = start + o.duration;
  auto arrivals = [&](std::uint64_t k) { return poisson_arrivals(rate, o.seed * 4 + k, start, end); };
  clock_type::time_point last = start;
  pt::run<order, prio::admin>(rt, [&](ctx<prio::admin> c) {
    auto g_mm = pt::fcreate<prio::generator>(c, generate<prio::mm, decltype(&mm_job)>, &mm_job, w, arrivals(0));
    auto g_fib = pt::fcreate<prio::generator>(c, generate<prio::fib, decltype(&fib_job)>, &fib_job, w, arrivals(1));
    auto g_sort = pt::fcreate<prio::generator>(c, generate<prio::sort, decltype(&sort_job)>, &sort_job, w, arrivals(2));
    auto g_sw = pt::fcreate<prio::generator>(c, generate<prio::sw, decltype(&sw_job)>, &sw_job, w, arrivals(3));
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
