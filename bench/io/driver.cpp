// Driver of suite `io` (bench/io/README.md): a separate process that starts an echo server,
// plays the interactions of the fairly prompt paper Sec. 6.2.1 against it and timestamps every request and
// response, as the fairly prompt paper Sec. 6.1's driver does ("when the driver initiates an event, it adds
// an entry in a buffer with the start time and expected response; a separate thread reads the
// output of the program and records the time difference").
//
//   --mode net    --conns C connections to the server's TCP port; interactions go round-robin
//   --mode term   the server's stdin/stdout are pipes from/to this process
//   --mode idle   --idle-conns K mostly idle connections; measures the server's CPU and memory
//                 (with --idle-line-ms P each connection sends a line every P ms meanwhile)
//   --mode saturate  --conns C connections, each with one request outstanding at all times
//                 (closed loop, --client-threads epoll threads) for --echo-ms: requests/s and
//                 latency percentiles of the saturated echo
//
// Interactions are sent open-loop at --rate per second (a fixed schedule that does not wait
// for answers) only while the server runs its compute kernel "loaded" (control protocol:
// echo_server.hpp); the server repeats the kernel until the measured loaded runs add up to
// --min-loaded-ms, so fast and slow runtimes see about as many interactions. Latency =
// response received - request sent, over the measured (non-warm-up) loaded phases. The server
// is `--server cmake:TARGET`, `go:PACKAGE` or `cargo:BIN`, resolved in the harness's build directory like the
// harness does (bench/harness/build.py); `--policy P` is passed on to Promptly servers.
//
// Prints the protocol's RESULT line (bench/README.md): result = the compute kernel's answer
// (idle: the number of connections that echoed), metrics region_s (median loaded compute time),
// compute_alone_s, compute_slowdown, latency_us_p50/p95/p99/max/mean, interactions, dropped,
// server_cpu_s, server_rss_mib (idle: idle_cpu_pct, idle_rss_mib, idle_kib_per_conn; saturate:
// requests_per_s, latency_us_p50/p99/max, server_cpu_pct; result = C); suite
// `fair` adds stretch metrics and the server's own "metric" lines.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_common.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& msg) {
    std::fprintf(stderr, "driver: error: %s\n", msg.c_str());
    std::exit(1);
}

double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

// cmake:TARGET -> BUILD/bench-bin/TARGET, go:PKG -> BUILD/go/PKG, cargo:BIN ->
// BUILD/rust/release/BIN (as the harness puts them); BUILD is the parent of the
// directory this driver runs from (it is itself BUILD/bench-bin/bench_io_driver).
std::string resolve_server(const std::string& spec) {
    fs::path self = fs::read_symlink("/proc/self/exe");
    fs::path build = self.parent_path().parent_path();
    auto colon = spec.find(':');
    if (colon == std::string::npos) fail("--server must be cmake:TARGET, go:PACKAGE or cargo:BIN, not '" + spec + "'");
    std::string kind = spec.substr(0, colon), name = spec.substr(colon + 1);
    fs::path p = kind == "cmake" ? build / "bench-bin" / name
                 : kind == "go"  ? build / "go" / name
                 : kind == "cargo" ? build / "rust" / "release" / name
                                   : fs::path();
    if (p.empty()) fail("--server kind must be cmake, go or cargo: '" + spec + "'");
    if (::access(p.c_str(), X_OK) != 0) fail("server program " + p.string() + " is missing (not built?)");
    return p.string();
}

void raise_fd_limit() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &lim);  // inherited by the server
    }
}

void write_all(int fd, const std::string& s) {
    for (std::size_t done = 0; done < s.size();) {
        ssize_t n = ::write(fd, s.data() + done, s.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(std::string("write to the server: ") + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
}

// Lines from a blocking fd, one at a time.
class line_input {
public:
    explicit line_input(int fd) : fd_(fd) {}
    std::optional<std::string> next() {
        for (;;) {
            if (auto nl = buf_.find('\n'); nl != std::string::npos) {
                std::string line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return line;
            }
            char chunk[4096];
            ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return std::nullopt;
            buf_.append(chunk, static_cast<std::size_t>(n));
        }
    }

private:
    int fd_;
    std::string buf_;
};

struct server_process {
    pid_t pid = -1;
    int control = -1;   // read end of the server's fd 3
    int stdin_w = -1;   // write end of the server's stdin
    int stdout_r = -1;  // term mode: read end of the server's stdout
};

server_process spawn_server(const std::string& path, const std::vector<std::string>& args, bool term) {
    int ctl[2], in[2], out[2] = {-1, -1};
    if (::pipe2(ctl, O_CLOEXEC) != 0 || ::pipe2(in, O_CLOEXEC) != 0 || (term && ::pipe2(out, O_CLOEXEC) != 0))
        fail(std::string("pipe: ") + std::strerror(errno));
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(path.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = ::fork();  // before any thread of the driver exists
    if (pid < 0) fail(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        // dup2 clears close-on-exec on the target; the originals close at exec.
        if (::dup2(in[0], 0) < 0 || ::dup2(term ? out[1] : 2, 1) < 0 || ::dup2(ctl[1], 3) < 0) _exit(126);
        ::execv(path.c_str(), argv.data());
        std::fprintf(stderr, "driver: exec %s: %s\n", path.c_str(), std::strerror(errno));
        _exit(127);
    }
    ::close(ctl[1]);
    ::close(in[0]);
    if (term) ::close(out[1]);
    return {pid, ctl[0], in[1], out[0]};
}

// Waits for the server to exit (at most `patience`), then kills it. Returns its rusage.
rusage reap(pid_t pid, std::chrono::seconds patience, bool& clean) {
    rusage ru{};
    int status = 0;
    auto deadline = clock_type::now() + patience;
    for (;;) {
        pid_t r = ::wait4(pid, &status, WNOHANG, &ru);
        if (r == pid) break;
        if (clock_type::now() > deadline) {
            std::fprintf(stderr, "driver: the server did not exit within %lld s; killing it\n",
                         static_cast<long long>(patience.count()));
            ::kill(pid, SIGKILL);
            ::wait4(pid, &status, 0, &ru);
            clean = false;
            return ru;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!clean) std::fprintf(stderr, "driver: the server exited with status 0x%x\n", status);
    return ru;
}

double cpu_s(const rusage& ru) {
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// The control channel, read on its own thread into a queue.
class control_channel {
public:
    explicit control_channel(int fd) : thread_([this, fd] {
        line_input in(fd);
        while (auto l = in.next()) push(*l);
        push("eof");
    }) {}
    ~control_channel() { thread_.join(); }

    // The next line, or nullopt if none arrives before `until`.
    std::optional<std::string> pop(clock_type::time_point until) {
        std::unique_lock lock(mu_);
        if (!cv_.wait_until(lock, until, [this] { return !lines_.empty(); })) return std::nullopt;
        std::string l = std::move(lines_.front());
        lines_.pop_front();
        return l;
    }

private:
    void push(std::string l) {
        {
            std::lock_guard lock(mu_);
            lines_.push_back(std::move(l));
        }
        cv_.notify_one();
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::string> lines_;
    std::thread thread_;
};

struct interaction {
    long phase;
    clock_type::time_point sent, received;
    bool answered = false;
};

class ledger {
public:
    long record_send(long phase, clock_type::time_point t) {
        std::lock_guard lock(mu_);
        log_.push_back({phase, t, {}, false});
        return static_cast<long>(log_.size()) - 1;
    }
    void record_answer(long seq, clock_type::time_point t) {
        std::lock_guard lock(mu_);
        if (seq < 0 || seq >= static_cast<long>(log_.size()) || log_[seq].answered) {
            std::fprintf(stderr, "driver: unexpected response for request %ld\n", seq);
            bad_ = true;
            return;
        }
        log_[seq].received = t;
        log_[seq].answered = true;
        ++answered_;
    }
    bool all_answered() {
        std::lock_guard lock(mu_);
        return answered_ == log_.size();
    }
    std::vector<interaction> snapshot() {
        std::lock_guard lock(mu_);
        return log_;
    }
    bool bad() {
        std::lock_guard lock(mu_);
        return bad_;
    }

private:
    std::mutex mu_;
    std::vector<interaction> log_;
    std::size_t answered_ = 0;
    bool bad_ = false;
};

// Reads echoed lines "r SEQ" from fd and stamps their arrival.
void receive(int fd, ledger& book) {
    line_input in(fd);
    while (auto l = in.next()) {
        auto t = clock_type::now();
        long seq = -1;
        if (std::sscanf(l->c_str(), "r %ld", &seq) != 1) {
            std::fprintf(stderr, "driver: unexpected line from the server: '%s'\n", l->c_str());
            continue;
        }
        book.record_answer(seq, t);
    }
}

// Local ports for the client sockets, handed out in turn from the system's ephemeral range.
// connect() on an unbound socket searches that range for a port whose connections leave the
// new one unique (__inet_hash_connect), checking the connections of every used port on the way:
// with 19,000 connections open to the same server that search took about 1 ms of system time per
// connect, and opening the idle bench's connections took most of its wall time. Binding each
// socket to the next port of the range first makes connect() constant-time. SO_REUSEADDR lets a
// port a finished run left in TIME_WAIT serve again (the new connection goes to a different
// server port, so it is unique); a port some other socket holds is skipped.
class local_ports {
public:
    local_ports() {
        std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
        if (!(range >> lo_ >> hi_) || lo_ < 1024 || hi_ > 65535 || lo_ > hi_) lo_ = 32768, hi_ = 60999;
        next_ = lo_ + static_cast<int>(std::random_device{}() % static_cast<unsigned>(hi_ - lo_ + 1));
    }
    int span() const { return hi_ - lo_ + 1; }
    int next() {
        std::lock_guard lock(mu_);
        const int p = next_;
        next_ = next_ == hi_ ? lo_ : next_ + 1;
        return p;
    }

private:
    std::mutex mu_;
    int lo_ = 32768, hi_ = 60999, next_ = 32768;
};

int connect_loopback(int port) {
    static local_ports ports;
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(static_cast<std::uint16_t>(port));
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int tries = ports.span(); tries > 0; --tries) {
        int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) fail(std::string("socket for a connection to the server: ") + std::strerror(errno));
        int one = 1;
        ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in local = server;
        local.sin_port = htons(static_cast<std::uint16_t>(ports.next()));
        if (::bind(s, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0 &&
            ::connect(s, reinterpret_cast<sockaddr*>(&server), sizeof server) == 0) {
            ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return s;
        }
        const int e = errno;
        ::close(s);
        // The port is taken (by a listener, or by a connection to the same server port): the next one.
        if (e != EADDRINUSE && e != EADDRNOTAVAIL) fail(std::string("connect to the server: ") + std::strerror(e));
    }
    fail("connect to the server: no free local port in the ephemeral range");
}

// Closes a client connection with a reset (SO_LINGER 0) rather than a FIN: an orderly close
// leaves the socket in TIME_WAIT on its ephemeral port for a minute, and a few runs of the idle
// bench (19,000 connections each) left 47,000 of them, so the next server's bind to port 0
// failed with EADDRINUSE. Used only once the measurement is over.
void close_without_time_wait(int s) {
    const linger abort{1, 0};
    ::setsockopt(s, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(s);
}

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    std::size_t rank = static_cast<std::size_t>(std::ceil(p * double(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

// CPU time of a live process so far, in seconds: the sum over its threads of
// /proc/PID/task/TID/schedstat's first field (nanoseconds on a CPU), which is
// far finer than /proc/PID/stat's clock ticks (10 ms here).
double proc_cpu_s(pid_t pid) {
    double total = 0;
    std::error_code ec;
    for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream f(t.path() / "schedstat");
        unsigned long long on_cpu_ns = 0;
        if (f >> on_cpu_ns) total += double(on_cpu_ns) * 1e-9;
    }
    if (ec) fail("cannot read /proc/" + std::to_string(pid) + "/task: " + ec.message());
    return total;
}

double proc_rss_mib(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(f, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    return 0;
}

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}


// One closed-loop client thread of --mode saturate: its sockets each keep one request
// outstanding; an echo's arrival is stamped and the next request sent at once.
struct saturate_client {
    std::vector<int> socks;
    std::vector<clock_type::time_point> sent;
    std::vector<double> lat_us;  // answers received inside the measured window
    long answered = 0;
};

void run_saturate_client(saturate_client& c, const std::atomic<int>& stage, clock_type::time_point from,
                         clock_type::time_point to) {
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) fail(std::string("epoll_create1: ") + std::strerror(errno));
    c.sent.resize(c.socks.size());
    for (std::size_t i = 0; i < c.socks.size(); ++i) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = i;
        if (::epoll_ctl(ep, EPOLL_CTL_ADD, c.socks[i], &ev) != 0) fail(std::string("epoll_ctl: ") + std::strerror(errno));
    }
    while (stage.load() == 0) std::this_thread::yield();
    static const char req[] = "r 0\n";
    for (std::size_t i = 0; i < c.socks.size(); ++i) {
        c.sent[i] = clock_type::now();
        write_all(c.socks[i], req);
    }
    epoll_event evs[256];
    char buf[4096];
    for (;;) {
        const int n = ::epoll_wait(ep, evs, 256, 100);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(std::string("epoll_wait: ") + std::strerror(errno));
        const auto now = clock_type::now();
        if (now >= to) break;
        for (int k = 0; k < n; ++k) {
            const std::size_t i = evs[k].data.u64;
            ssize_t got = ::read(c.socks[i], buf, sizeof buf);
            if (got <= 0) fail("the server closed a connection or failed during the saturated echo");
            // One request outstanding: the answer is "r 0\n", possibly split across reads.
            if (buf[got - 1] != '\n') continue;
            if (now >= from) {
                c.lat_us.push_back(seconds(now - c.sent[i]) * 1e6);
                ++c.answered;
            }
            c.sent[i] = now;
            write_all(c.socks[i], req);
        }
    }
    ::close(ep);
}
}  // namespace

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    const std::string server_spec = a.get_string("server", "");
    const std::string mode = a.get_string("mode", "net");
    const double rate = double(a.get_long("rate", 50));
    const long conns = a.get_long("conns", 8);
    const long idle_conns = a.get_long("idle-conns", 2000);
    const double idle_s = double(a.get_long("idle-ms", 2000)) / 1000.0;
    const long idle_line_ms = a.get_long("idle-line-ms", 0);
    const long echo_ms = a.get_long("echo-ms", 3000), echo_warm_ms = a.get_long("echo-warm-ms", 500);
    const long client_threads = a.get_long("client-threads", 2);
    const double drain_s = double(a.get_long("drain-ms", 3000)) / 1000.0;
    const long min_loaded_ms = a.get_long("min-loaded-ms", 0);
    const std::string policy = a.get_string("policy", "");  // passed on to Promptly servers
    const long workers = a.get_long("workers", 2), n = a.get_long("n", 36), cutoff = a.get_long("cutoff", 12);
    const long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 3);
    // Suite `fair`: extra server options ("--kernel fib --criterion 50-25-25", split at spaces),
    // and the stretch the criterion promises, to report measured / expected.
    const std::string server_args = a.get_string("server-args", "");
    const double expected_stretch = std::atof(a.get_string("expected-stretch", "0").c_str());
    a.finish();
    if (server_spec.empty()) bench::args::fail("--server is required");
    if (mode != "net" && mode != "term" && mode != "idle" && mode != "saturate")
        bench::args::fail("--mode must be net, term, idle or saturate");
    if (idle_line_ms < 0 || echo_ms < 1 || echo_warm_ms < 0 || client_threads < 1)
        bench::args::fail("need --idle-line-ms >= 0, --echo-ms >= 1, --echo-warm-ms >= 0, --client-threads >= 1");
    if (rate <= 0 || conns < 1 || reps < 1) bench::args::fail("need --rate > 0, --conns >= 1, --reps >= 1");

    raise_fd_limit();
    ::signal(SIGPIPE, SIG_IGN);  // a dead server shows up as an error, not a signal
    const bool term = mode == "term", saturate = mode == "saturate", idle = mode == "idle" || saturate;
    const std::string path = resolve_server(server_spec);
    std::vector<std::string> sargs = {"--mode", term ? "term" : "net", "--workers", std::to_string(workers),
                                      "--n", std::to_string(n), "--cutoff", std::to_string(cutoff),
                                      "--warmup", std::to_string(idle ? 0 : warmup), "--reps",
                                      std::to_string(idle ? 0 : reps), "--min-loaded-ms",
                                      std::to_string(idle ? 0 : min_loaded_ms)};
    if (!policy.empty()) sargs.insert(sargs.end(), {"--policy", policy});
    for (std::size_t b = 0, e; b < server_args.size(); b = e + 1) {
        e = server_args.find(' ', b);
        if (e == std::string::npos) e = server_args.size();
        if (e > b) sargs.push_back(server_args.substr(b, e - b));
    }
    server_process srv = spawn_server(path, sargs, term);
    control_channel ctl(srv.control);
    auto next_line = [&](double timeout_s) {
        auto l = ctl.pop(clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                  std::chrono::duration<double>(timeout_s)));
        if (!l) fail("the server sent nothing for " + fmt("%.0f", timeout_s) + " s");
        if (*l == "eof") fail("the server closed its control channel early (crashed?)");
        return *l;
    };

    std::string ready = next_line(60);
    int port = 0;
    if (ready.rfind("ready", 0) != 0) fail("expected 'ready', got '" + ready + "'");
    if (!term && std::sscanf(ready.c_str(), "ready port=%d", &port) != 1) fail("no port in '" + ready + "'");

    if (saturate) {
        // C connections, each with one request outstanding: the server's throughput and latency.
        std::vector<saturate_client> clients(static_cast<std::size_t>(client_threads));
        for (long i = 0; i < conns; ++i)
            clients[static_cast<std::size_t>(i % client_threads)].socks.push_back(connect_loopback(port));
        if (next_line(60) != "done") fail("expected 'done' from a server without phases");
        std::atomic<int> stage{0};
        const auto start = clock_type::now() + std::chrono::milliseconds(100);
        const auto from = start + std::chrono::milliseconds(echo_warm_ms);
        const auto to = from + std::chrono::milliseconds(echo_ms);
        std::vector<std::thread> threads;
        for (auto& c : clients) threads.emplace_back([&c, &stage, from, to] { run_saturate_client(c, stage, from, to); });
        std::this_thread::sleep_until(start);
        stage.store(1);
        std::this_thread::sleep_until(from);
        const double c0 = proc_cpu_s(srv.pid);
        std::this_thread::sleep_until(to);
        const double cpu = proc_cpu_s(srv.pid) - c0;
        for (auto& t : threads) t.join();
        std::vector<double> lat_us;
        long answered = 0;
        for (auto& c : clients) {
            answered += c.answered;
            lat_us.insert(lat_us.end(), c.lat_us.begin(), c.lat_us.end());
        }
        if (lat_us.empty()) fail("no echo arrived in the measured window");
        std::sort(lat_us.begin(), lat_us.end());
        const double window = double(echo_ms) / 1000.0;
        for (auto& c : clients)
            for (int s : c.socks) close_without_time_wait(s);
        ::close(srv.stdin_w);
        bool clean = true;
        rusage ru = reap(srv.pid, std::chrono::seconds(20), clean);
        if (!clean) fail("the server did not shut down cleanly");
        std::printf("RESULT {\"result\": %ld, \"metrics\": {\"region_s\": %.6f, \"requests_per_s\": %.1f, "
                    "\"latency_us_p50\": %.3f, \"latency_us_p99\": %.3f, \"latency_us_max\": %.3f, "
                    "\"server_cpu_pct\": %.2f, \"server_cpu_s\": %.4f, \"server_rss_mib\": %.3f}}\n",
                    conns, window, double(answered) / window, percentile(lat_us, 0.50), percentile(lat_us, 0.99),
                    lat_us.back(), 100.0 * cpu / window, cpu_s(ru), double(ru.ru_maxrss) / 1024.0);
        return 0;
    }

    if (idle) {
        // K mostly idle connections: what do they cost the server?
        std::vector<int> socks;
        for (long i = 0; i < idle_conns; ++i) socks.push_back(connect_loopback(port));
        if (next_line(60) != "done") fail("expected 'done' from a server without phases");
        std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let it settle
        double c0 = proc_cpu_s(srv.pid);
        auto t0 = clock_type::now();
        if (idle_line_ms > 0) {
            // Every connection sends a line every idle_line_ms, the connections' turns spread
            // evenly over the period; their echoes wait in the sockets until the check below.
            const auto step = std::chrono::duration_cast<clock_type::duration>(
                std::chrono::duration<double>(double(idle_line_ms) / 1000.0 / double(idle_conns)));
            const auto end = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(idle_s));
            auto next = t0;
            for (std::size_t i = 0;; i = (i + 1) % socks.size()) {
                next += step;
                if (next >= end) break;
                std::this_thread::sleep_until(next);
                write_all(socks[i], "r 0\n");
            }
            std::this_thread::sleep_until(end);
        } else {
            std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
        }
        double window = seconds(clock_type::now() - t0);
        double cpu = proc_cpu_s(srv.pid) - c0;
        double rss = proc_rss_mib(srv.pid);
        long echoed = 0;  // every connection is alive: one line each
        for (int s : socks) write_all(s, "r 0\n");
        for (int s : socks) {
            line_input in(s);
            if (auto l = in.next(); l && *l == "r 0") ++echoed;
        }
        for (int s : socks) close_without_time_wait(s);
        ::close(srv.stdin_w);
        bool clean = true;
        rusage ru = reap(srv.pid, std::chrono::seconds(20), clean);
        if (!clean) fail("the server did not shut down cleanly");
        std::printf("RESULT {\"result\": %ld, \"metrics\": {\"region_s\": %.6f, \"idle_cpu_pct\": %.4f, "
                    "\"idle_rss_mib\": %.3f, \"idle_kib_per_conn\": %.3f, \"server_cpu_s\": %.4f, "
                    "\"server_rss_mib\": %.3f}}\n",
                    echoed, window, 100.0 * cpu / window, rss, rss * 1024.0 / double(idle_conns), cpu_s(ru),
                    double(ru.ru_maxrss) / 1024.0);
        return 0;
    }

    ledger book;
    std::vector<int> socks;
    std::vector<std::thread> receivers;
    if (term) {
        receivers.emplace_back([&] { receive(srv.stdout_r, book); });
    } else {
        for (long i = 0; i < conns; ++i) socks.push_back(connect_loopback(port));
        for (int s : socks) receivers.emplace_back([&book, s] { receive(s, book); });
    }

    const auto interval = std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(1.0 / rate));
    std::mt19937 rng(12345);
    std::vector<double> alone, loaded;
    std::vector<std::pair<std::string, double>> server_metrics;  // "metric NAME VALUE" lines, last value wins
    long answer = LONG_MIN;
    long phase = -1;
    bool sending = false;
    clock_type::time_point next_send;
    long sent = 0;
    for (;;) {
        auto until = sending ? next_send : clock_type::now() + std::chrono::seconds(600);
        if (auto l = ctl.pop(until)) {
            if (*l == "eof") fail("the server closed its control channel early (crashed?)");
            if (*l == "done") break;
            char what[16], name[64];
            long i;
            double s;
            long v;
            if (std::sscanf(l->c_str(), "metric %63s %lf", name, &s) == 2) {
                auto it = std::find_if(server_metrics.begin(), server_metrics.end(),
                                       [&](const auto& m) { return m.first == name; });
                if (it != server_metrics.end()) it->second = s;
                else server_metrics.emplace_back(name, s);
            } else if (std::sscanf(l->c_str(), "phase %15s %ld", what, &i) == 2) {
                sending = std::strcmp(what, "loaded") == 0;
                phase = i;
                // A random offset into the first interval: requests never line up with the
                // start of the kernel.
                next_send = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                    interval * std::uniform_real_distribution<double>(0, 1)(rng));
            } else if (std::sscanf(l->c_str(), "time %15s %ld %lf %ld", what, &i, &s, &v) == 4) {
                sending = false;
                if (answer != LONG_MIN && v != answer) fail("the compute kernel's answer changed between repetitions");
                answer = v;
                if (i >= warmup) (std::strcmp(what, "loaded") == 0 ? loaded : alone).push_back(s);
            } else {
                fail("unexpected control line '" + *l + "'");
            }
            continue;
        }
        if (!sending) continue;
        // Open loop: the schedule does not wait for answers.
        long seq = book.record_send(phase, clock_type::now());
        std::string req = "r " + std::to_string(seq) + "\n";
        write_all(term ? srv.stdin_w : socks[static_cast<std::size_t>(sent % conns)], req);
        ++sent;
        next_send += interval;
    }

    // Answers still in flight get drain-ms to arrive; missing ones count as dropped.
    auto drain_until =
        clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(drain_s));
    while (!book.all_answered() && clock_type::now() < drain_until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto end = clock_type::now();

    for (int s : socks) ::shutdown(s, SHUT_RDWR);
    ::close(srv.stdin_w);  // the server exits at stdin EOF
    bool clean = true;
    rusage ru = reap(srv.pid, std::chrono::seconds(20), clean);
    for (auto& t : receivers) t.join();
    for (int s : socks) ::close(s);
    if (!clean) fail("the server did not shut down cleanly");
    if (book.bad()) fail("the server echoed something that was not sent");

    std::vector<double> lat_us;
    long dropped = 0, measured = 0;
    for (const auto& it : book.snapshot()) {
        if (it.phase < warmup) continue;
        ++measured;
        if (!it.answered) ++dropped;
        lat_us.push_back(seconds((it.answered ? it.received : end) - it.sent) * 1e6);
    }
    if (lat_us.empty()) fail("no interaction fell into a measured loaded phase: make the compute kernel longer");
    std::sort(lat_us.begin(), lat_us.end());
    double mean = 0;
    for (double x : lat_us) mean += x;
    mean /= double(lat_us.size());
    const double region = bench::median(loaded), alone_s = bench::median(alone);

    std::string extra;
    if (expected_stretch > 0)
        extra += fmt(", \"stretch\": %.6f", region / alone_s) + fmt(", \"expected_stretch\": %.6f", expected_stretch) +
                 fmt(", \"stretch_ratio\": %.6f", region / alone_s / expected_stretch) +
                 fmt(", \"baseline_s\": %.9g", alone_s);
    for (const auto& [k, val] : server_metrics) extra += ", \"" + k + "\": " + fmt("%.9g", val);
    std::printf("RESULT {\"result\": %ld, \"metrics\": {\"region_s\": %.9g, \"region_s_min\": %.9g, "
                "\"compute_alone_s\": %.9g, \"compute_slowdown\": %.6f, \"latency_us_p50\": %.3f, "
                "\"latency_us_p95\": %.3f, \"latency_us_p99\": %.3f, \"latency_us_max\": %.3f, "
                "\"latency_us_mean\": %.3f, \"interactions\": %ld, \"dropped\": %ld, \"server_cpu_s\": %.4f, "
                "\"server_rss_mib\": %.3f%s}}\n",
                answer, region, *std::min_element(loaded.begin(), loaded.end()), alone_s, region / alone_s,
                percentile(lat_us, 0.50), percentile(lat_us, 0.95), percentile(lat_us, 0.99), lat_us.back(), mean,
                measured, dropped, cpu_s(ru), double(ru.ru_maxrss) / 1024.0, extra.c_str());
    return 0;
}
