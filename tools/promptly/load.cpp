// promptly load: an open-loop load generator (AMCilk Sec. 6.1: jobs arrive
// online, flow time = arrival to completion). Arrivals are Poisson at
// --rate, or at the rate that makes --utilization of the server's workers
// busy given the workload's mean work. Jobs are submitted with "wait":true,
// spread round-robin over --connections connections; one reader thread per
// connection collects the replies (in order, per the protocol). Every job
// gets a record: the server's timing (queued/run/flow) and the client's
// submit-to-reply time (which includes waiting behind earlier replies on
// the same connection).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "cli.hpp"

namespace promptly::cli {

double mean_work_ms(const std::string& workload) {
  // The bing program's tables (src/server/programs/bing.cpp): bing bins
  // 5 + 10k ms with weight (k+1)^-1.5, finance bins 4 + 4k ms with the
  // listed weights, k = 0..19.
  static constexpr double finance_weights[20] = {2, 6, 12, 16, 16, 13, 10, 7.5, 5.5, 4, 3, 2.2, 1.6, 1.2, 0.9, 0.7, 0.5, 0.4, 0.3, 0.2};
  const bool finance = workload == "finance";
  double total = 0, sum = 0;
  for (int k = 0; k < 20; ++k) {
    const double w = finance ? finance_weights[k] : std::pow(k + 1.0, -1.5);
    total += w;
    sum += w * (finance ? 4.0 + 4.0 * k : 5.0 + 10.0 * k);
  }
  return sum / total;
}

namespace {

using clock = std::chrono::steady_clock;

struct record {
  std::uint64_t index = 0;
  double submitted_s = 0;  // since the start of the run
  std::uint64_t id = 0;
  std::string state = "lost";
  std::string error;
  double queued_us = 0, run_us = 0, flow_us = 0, client_us = 0;
};

struct lane {
  std::unique_ptr<server::daemon::client> cl;
  std::mutex mu;
  std::deque<std::size_t> pending;  // record indices in send order
  std::thread reader;
};

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - (p > 0 ? 1 : 0);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int run_load(const connection_options& c, const load_options& o) {
  const auto ep = make_endpoint(c);
  double rate = o.rate;
  if (o.utilization > 0) {
    if (o.workload == "fixed") {
      std::fprintf(stderr, "promptly load: --utilization needs a workload with a known mean work (bing, finance); "
                           "use --rate with --workload fixed\n");
      return exit_usage;
    }
    server::daemon::client probe(ep);
    const json v = probe.call({{"op", "version"}});
    if (!v.value("ok", false)) return print_reply(v);
    const double workers = v.value("workers", 0.0);
    if (workers <= 0) {
      std::fprintf(stderr, "promptly load: the server did not say how many workers it has; use --rate\n");
      return exit_usage;
    }
    const double work_s = mean_work_ms(o.workload) * o.scale / 1000.0;
    if (work_s <= 0) {
      std::fprintf(stderr, "promptly load: --scale 0 makes the mean work 0; use --rate\n");
      return exit_usage;
    }
    rate = o.utilization * workers / work_s;
    std::fprintf(stderr, "promptly load: %s mean work %.2f ms x scale %.3g, %g workers, utilisation %.2f -> %.1f jobs/s\n",
                 o.workload.c_str(), mean_work_ms(o.workload), o.scale, workers, o.utilization, rate);
  }
  const json fixed_args = o.workload == "fixed" ? parse_args(o.args) : json::object();
  const std::string program = o.workload == "fixed" ? o.program : "bing";

  std::vector<record> records;
  records.reserve(static_cast<std::size_t>(std::min(rate * o.duration_s * 1.2 + 16, 5e7)));
  std::mutex records_mu;  // guards growth of `records` against the readers' writes
  std::vector<std::unique_ptr<lane>> lanes;
  for (unsigned i = 0; i < o.connections; ++i) {
    auto l = std::make_unique<lane>();
    l->cl = std::make_unique<server::daemon::client>(ep);
    lanes.push_back(std::move(l));
  }
  const auto t0 = clock::now();
  std::atomic<std::uint64_t> replies{0}, rejected{0};
  for (auto& lp : lanes) {
    lane* l = lp.get();
    l->reader = std::thread([l, &records, &records_mu, &replies, &rejected, t0] {
      for (;;) {
        std::optional<std::string> line;
        try {
          line = l->cl->receive_line();
        } catch (const std::exception&) {
          return;
        }
        if (!line) return;
        const auto now = clock::now();
        std::size_t idx;
        {
          std::lock_guard lock(l->mu);
          if (l->pending.empty()) continue;  // not a reply to us (cannot happen in protocol 1)
          idx = l->pending.front();
          l->pending.pop_front();
        }
        const json r = json::parse(*line, nullptr, false);
        std::lock_guard lock(records_mu);
        record& rec = records[idx];
        rec.client_us = std::chrono::duration<double, std::micro>(now - t0).count() - rec.submitted_s * 1e6;
        if (r.is_discarded()) {
          rec.state = "bad_reply";
        } else if (!r.value("ok", false)) {
          rec.state = r["error"].value("code", std::string("error"));
          rec.error = r["error"].value("message", std::string());
          if (rec.state == "rejected") rejected.fetch_add(1, std::memory_order_relaxed);  // progress display only
        } else {
          rec.id = r.value("id", std::uint64_t{0});
          rec.state = r.value("state", std::string("?"));
          rec.error = r.value("error", std::string());
          if (r.contains("timing")) {
            rec.queued_us = r["timing"].value("queued_us", 0.0);
            rec.run_us = r["timing"].value("run_us", 0.0);
            rec.flow_us = r["timing"].value("flow_us", 0.0);
          }
        }
        replies.fetch_add(1, std::memory_order_relaxed);  // progress display only
      }
    });
  }

  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(rate);
  double next_s = 0;
  std::uint64_t sent = 0;
  auto last_progress = clock::now();
  const bool show = o.progress && ::isatty(STDERR_FILENO) != 0;
  for (;;) {
    next_s += gap(rng);
    if (next_s >= o.duration_s) break;
    const auto due = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(next_s));
    std::this_thread::sleep_until(due);
    json args = fixed_args;
    if (o.workload != "fixed") args = {{"workload", o.workload}, {"seed", rng() >> 11}, {"scale", o.scale}};
    json req{{"op", "submit"}, {"program", program}, {"args", std::move(args)}, {"wait", true}};
    if (!o.job_class.empty()) req["class"] = o.job_class;
    lane& l = *lanes[sent % lanes.size()];
    std::size_t idx;
    {
      std::lock_guard lock(records_mu);
      idx = records.size();
      record rec;
      rec.index = sent;
      rec.submitted_s = std::chrono::duration<double>(clock::now() - t0).count();
      records.push_back(std::move(rec));
    }
    {
      std::lock_guard lock(l.mu);
      l.pending.push_back(idx);
    }
    l.cl->send(std::move(req));
    ++sent;
    if (show && clock::now() - last_progress > std::chrono::milliseconds(250)) {
      last_progress = clock::now();
      const double frac = next_s / o.duration_s;
      const int bars = static_cast<int>(frac * 30);
      std::fprintf(stderr, "\r[%-30s] %3.0f%%  sent %llu  replies %llu  rejected %llu", std::string(bars, '#').c_str(),
                   frac * 100, static_cast<unsigned long long>(sent),
                   static_cast<unsigned long long>(replies.load(std::memory_order_relaxed)),
                   static_cast<unsigned long long>(rejected.load(std::memory_order_relaxed)));
    }
  }
  // No more requests: each connection's server side finishes its replies
  // and then closes, which ends the readers.
  for (auto& l : lanes) l->cl->shutdown_write();
  for (auto& l : lanes) l->reader.join();
  if (show) std::fputs("\n", stderr);
  const double wall = std::chrono::duration<double>(clock::now() - t0).count();

  std::vector<double> flows;
  std::uint64_t done = 0, failed = 0, cancelled = 0, rej = 0, lost = 0, other = 0;
  for (const auto& r : records) {
    if (r.state == "done") {
      ++done;
      flows.push_back(r.flow_us / 1000.0);
    } else if (r.state == "failed") ++failed;
    else if (r.state == "cancelled") ++cancelled;
    else if (r.state == "rejected") ++rej;
    else if (r.state == "lost") ++lost;
    else ++other;
  }
  if (!o.out.empty()) {
    std::ofstream out(o.out);
    if (!out) throw std::runtime_error("cannot write '" + o.out + "'");
    const bool as_json = o.out.size() >= 5 && o.out.substr(o.out.size() - 5) == ".json";
    if (as_json) {
      json arr = json::array();
      for (const auto& r : records)
        arr.push_back({{"index", r.index}, {"id", r.id}, {"program", program}, {"submitted_s", r.submitted_s},
                       {"state", r.state}, {"error", r.error}, {"queued_us", r.queued_us}, {"run_us", r.run_us},
                       {"flow_us", r.flow_us}, {"client_us", r.client_us}});
      out << arr.dump(1, ' ', false, json::error_handler_t::replace) << '\n';
    } else {
      out << "index,id,program,submitted_s,state,error,queued_us,run_us,flow_us,client_us\n";
      for (const auto& r : records)
        out << r.index << ',' << r.id << ',' << csv_field(program) << ',' << r.submitted_s << ',' << csv_field(r.state)
            << ',' << csv_field(r.error) << ',' << r.queued_us << ',' << r.run_us << ',' << r.flow_us << ','
            << r.client_us << '\n';
    }
  }
  double mean = 0;
  for (const double f : flows) mean += f;
  if (!flows.empty()) mean /= static_cast<double>(flows.size());
  const json summary{{"sent", sent},
                     {"done", done},
                     {"failed", failed},
                     {"cancelled", cancelled},
                     {"rejected", rej},
                     {"lost", lost},
                     {"other", other},
                     {"target_rate", rate},
                     {"achieved_rate", static_cast<double>(sent) / o.duration_s},
                     {"wall_s", wall},
                     {"flow_ms", {{"mean", mean}, {"p50", percentile(flows, 0.5)}, {"p99", percentile(flows, 0.99)}}}};
  std::puts(summary.dump().c_str());
  return lost == 0 ? exit_ok : exit_server_error;
}

}  // namespace promptly::cli
