// `preempt-server` (suite `priority`): a user's shape of the long-strand problem, on Promptly.
// A TCP "fib N" service at level 0 (io::listener::serve with an io::line_reader per connection, the
// pattern of docs/io.md) beside a level-2 background that loops over sorting --sort-n random ints
// the way a user writes it: the two halves with promptly::parallel_sort in a promptly::join, then
// one serial std::inplace_merge of the whole array (a strand of tens of ms: no boundary inside),
// then a serial check that the array is sorted.
//
// The client is a thread of this process that is no worker: one connection, a request line
// "fib N" every --period-us on an absolute schedule, latency = from just before its send() to the
// end of the answer's recv(). Each repetition: --floor-requests with no background, then the
// background starts, runs --settle-ms, and --requests requests are timed with it.
// Metrics: latency_us_p50/p99/max with the background, floor_us_p50/p99 without, sorts_per_s (the
// background's throughput while the requests run) and merge_ms (one serial merge, measured alone).
// The answer is {"requests", "checksum" (sum of the answers)}. --policy and --preemption as in
// promptly_latency.cpp.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <promptly/io.hpp>
#include <promptly/promptly.hpp>
#include <promptly/sort.hpp>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "prio_common.hpp"
#include "promptly_preemption.hpp"

namespace io = promptly::io;
using steady = prio::clock;

namespace {

long fib_serial(long n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

// The background: sorts until `stop`, counting completed sorts.
void sort_forever(long n, std::atomic<bool>& stop, std::atomic<long>& sorts, std::atomic<long>& wrong) {
    std::vector<int> v(static_cast<std::size_t>(n));
    std::mt19937 rng(12345);
    while (!stop.load(std::memory_order_relaxed)) {
        for (auto& x : v) x = static_cast<int>(rng());
        const auto mid = v.begin() + n / 2;
        promptly::join([&] { promptly::parallel_sort(v.begin(), mid); },
                       [&] { promptly::parallel_sort(mid, v.end()); });
        std::inplace_merge(v.begin(), mid, v.end());  // serial: the long strand
        if (!std::is_sorted(v.begin(), v.end())) wrong.fetch_add(1, std::memory_order_relaxed);
        sorts.fetch_add(1, std::memory_order_relaxed);
    }
}

double merge_ms(long n) {
    std::vector<int> v(static_cast<std::size_t>(n));
    std::mt19937 rng(7);
    for (auto& x : v) x = static_cast<int>(rng());
    std::sort(v.begin(), v.begin() + n / 2);
    std::sort(v.begin() + n / 2, v.end());
    auto t0 = steady::now();
    std::inplace_merge(v.begin(), v.begin() + n / 2, v.end());
    return prio::seconds_since(t0, steady::now()) * 1e3;
}

struct client {
    int fd = -1;
    std::string buf;

    explicit client(unsigned short port) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
            bench::args::fail(std::string("client: cannot connect: ") + std::strerror(errno));
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    ~client() { ::close(fd); }

    // One request; returns the answer.
    long ask(long n) {
        std::string line = "fib " + std::to_string(n) + "\n";
        if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != ssize_t(line.size())) bench::args::fail("client: send failed");
        for (;;) {
            if (auto nl = buf.find('\n'); nl != std::string::npos) {
                long v = std::stol(buf.substr(0, nl));
                buf.erase(0, nl + 1);
                return v;
            }
            char tmp[256];
            ssize_t got = ::recv(fd, tmp, sizeof tmp, 0);
            if (got <= 0) bench::args::fail("client: the server closed the connection");
            buf.append(tmp, std::size_t(got));
        }
    }

    // `count` requests on an absolute schedule; latencies in us appended to `out`.
    long run(long count, long fib_n, long period_us, std::vector<double>& out) {
        long sum = 0;
        auto t0 = steady::now();
        for (long k = 0; k < count; ++k) {
            std::this_thread::sleep_until(t0 + k * std::chrono::microseconds(period_us));
            auto s = steady::now();
            long v = ask(fib_n);
            out.push_back(prio::seconds_since(s, steady::now()) * 1e6);
            if (v != prio::fib_value(fib_n)) bench::args::fail("the server answered a wrong fib");
            sum += v;
        }
        return sum;
    }
};

}  // namespace

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const long workers = a.get_long("workers", 2);
    const long warmup = a.get_long("warmup", 0), reps = a.get_long("reps", 1);
    const long sort_n = a.get_long("sort-n", 2'000'000);
    const long fib_n = a.get_long("fib-n", 22);
    const long period_us = a.get_long("period-us", 10000);
    const long requests = a.get_long("requests", 150), floor_requests = a.get_long("floor-requests", 50);
    const long settle_ms = a.get_long("settle-ms", 200);
    const std::string policy = a.get_string("policy", "prompt");
    const long preemption = a.get_long("preemption", -1);
    a.finish();
    if (preemption < -1 || preemption > 1) bench::args::fail("--preemption must be 0 or 1");
    if (workers < 1 || reps < 1 || sort_n < 2 || fib_n < 1 || fib_n > 40 || requests < 1 || floor_requests < 1)
        bench::args::fail("bad --workers/--reps/--sort-n/--fib-n (1..40)/--requests/--floor-requests");

    promptly::runtime_config cfg;
    cfg.workers = unsigned(workers);
    cfg.levels = 3;
    cfg.policy = policy;
    prio::set_preemption(cfg, preemption);
    promptly::runtime rt(cfg);
    auto l = io::listener::tcp("127.0.0.1", 0);
    std::stop_source stop_server;
    auto served = l.serve(
        rt,
        [](io::descriptor c, std::stop_token st) {
            io::line_reader lines(c);
            for (;;) {
                std::string line;
                try {
                    line = lines.read_line({}, st).get();
                } catch (const io::end_of_file&) {
                    return;
                }
                long n = line.rfind("fib ", 0) == 0 ? std::stol(line.substr(4)) : -1;
                std::string answer = (n >= 0 && n <= 40 ? std::to_string(fib_serial(n)) : "-1") + "\n";
                io::write(c, answer, {}, st).get();
            }
        },
        {.level = 0, .stop = stop_server.get_token()});

    const double merge = merge_ms(sort_n);
    std::vector<double> p50s, p99s, maxs, f50s, f99s, rates;
    long checksum = 0, total = 0;
    {
        client cl(l.port());
        for (long i = 0; i < warmup + reps; ++i) {
            std::vector<double> floor, lat;
            long sum = cl.run(floor_requests, fib_n, period_us, floor);
            std::atomic<bool> stop{false};
            std::atomic<long> sorts{0}, wrong{0};
            auto bg = rt.submit(promptly::level{2}, [&] { sort_forever(sort_n, stop, sorts, wrong); });
            std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
            long s0 = sorts.load();
            auto t0 = steady::now();
            sum += cl.run(requests, fib_n, period_us, lat);
            double rate = double(sorts.load() - s0) / prio::seconds_since(t0, steady::now());
            stop.store(true);
            bg.get();
            if (wrong.load() != 0) bench::args::fail("a background sort left the array unsorted");
            if (i > 0 && sum != checksum) bench::args::fail("checksum changed between repetitions");
            checksum = sum;
            total = floor_requests + requests;
            std::fprintf(stderr, "%s %ld: p50 %.0f us, p99 %.0f us, max %.0f us; floor p50 %.0f p99 %.0f us; %.2f sorts/s\n",
                         i < warmup ? "warm-up" : "rep", i, prio::percentile(lat, 50), prio::percentile(lat, 99),
                         prio::percentile(lat, 100), prio::percentile(floor, 50), prio::percentile(floor, 99), rate);
            if (i < warmup) continue;
            p50s.push_back(prio::percentile(lat, 50));
            p99s.push_back(prio::percentile(lat, 99));
            maxs.push_back(prio::percentile(lat, 100));
            f50s.push_back(prio::percentile(floor, 50));
            f99s.push_back(prio::percentile(floor, 99));
            rates.push_back(rate);
        }
    }
    stop_server.request_stop();
    served.get();
    bench::region_stats s{bench::median(p99s) * 1e-6, *std::min_element(p99s.begin(), p99s.end()) * 1e-6, 0};
    bench::print_result("{\"requests\": " + std::to_string(total) + ", \"checksum\": " + std::to_string(checksum) + "}", s,
                        {{"latency_us_p50", bench::median(p50s)},
                         {"latency_us_p99", bench::median(p99s)},
                         {"latency_us_max", bench::median(maxs)},
                         {"floor_us_p50", bench::median(f50s)},
                         {"floor_us_p99", bench::median(f99s)},
                         {"sorts_per_s", bench::median(rates)},
                         {"merge_ms", merge}});
    return 0;
}
