#include "driver.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>

#include "message_text.hpp"

namespace email {
namespace {

using clock_type = std::chrono::steady_clock;

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error("email driver: " + what + ": " + std::strerror(errno));
}

int connect_to(const std::string& host, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("email driver: not a numeric IPv4 address: '" + host + "'");
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw sys_error("socket");
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw sys_error("connect to " + host + ":" + std::to_string(port));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Blocking line I/O for the login and control phases.
struct blocking_line {
  int fd;
  std::string buf;
  void write_all(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw sys_error("write");
      s.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  std::string read_line() {
    for (;;) {
      if (auto nl = buf.find('\n'); nl != std::string::npos) {
        std::string line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        return line;
      }
      char tmp[4096];
      ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw sys_error("read");
      if (n == 0) throw std::runtime_error("email driver: the server closed the connection");
      buf.append(tmp, static_cast<std::size_t>(n));
    }
  }
  std::string call(std::string_view request) {
    write_all(std::string(request) + "\n");
    return read_line();
  }
};

enum class kind { send, sort, print };

struct outstanding {
  kind what;
  std::uint64_t seq = 0;         // the server's number, known from its ACK
  clock_type::time_point sent;     // open loop: when it was due
  clock_type::time_point written;  // when the driver wrote it, or queued it behind an unfinished write (closed loop: sent)
  bool measured = false;
  std::string sort_key;
};

struct client {
  int fd = -1;
  std::size_t index = 0;
  std::string name;
  std::size_t mailbox_at_login = 0;  // PRINT indexes below this always exist (mailboxes never shrink)
  std::mt19937_64 rng;
  std::mt19937_64 arrivals;          // open loop: the gaps, apart from the operation mix's stream
  clock_type::time_point next_arrival;  // open loop
  std::uint64_t next_seq = 1;           // the number the server gives the next request it acknowledges
  std::uint64_t sent_messages = 0;
  std::size_t issued = 0;
  std::deque<outstanding> unacked;  // sent, no ACK yet: the server acknowledges in request order
  std::vector<outstanding> acked;   // acknowledged, no DONE yet: DONEs come in any order
  bool busy() const { return !unacked.empty() || !acked.empty(); }
  std::string out;
  std::size_t out_at = 0;
  std::string in;
  bool want_write = false;
  bool done = false;
};

class driver {
 public:
  explicit driver(const driver_options& o) : opt_(o) {}

  driver_report run() {
    if (opt_.clients == 0) throw std::runtime_error("email driver: clients must be at least 1");
    if (!std::isfinite(opt_.rate_per_s) || opt_.rate_per_s < 0)
      throw std::invalid_argument("email driver: the open-loop rate must be a finite number of requests per second >= 0 (0: closed loop)");
    control_.fd = connect_to(opt_.host, opt_.port);
    clients_.resize(opt_.clients);
    for (std::size_t i = 0; i < clients_.size(); ++i) login(clients_[i], i);
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) throw sys_error("epoll_create1");
    for (auto& c : clients_) {
      ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = &c;
      if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, c.fd, &ev) != 0) throw sys_error("epoll_ctl");
    }
    const bool counted = opt_.requests_per_client > 0;
    const auto start = clock_type::now();
    measure_from_ = counted ? start : start + opt_.warmup;
    measure_until_ = counted ? clock_type::time_point::max() : measure_from_ + opt_.measure;
    bool reset_done = counted;
    // Open loop: the arrivals are timeouts, and the kernel's default timer slack (50 us) would
    // make every request late by up to that much. The caller's slack is restored at the end.
    const long slack = ::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (open_loop() && slack > 1000) ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    struct restore_slack {
      long ns;
      ~restore_slack() {
        if (ns > 0) ::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(ns), 0, 0, 0);
      }
    } restore{slack};
    if (open_loop()) {
      for (auto& c : clients_) c.next_arrival = start + next_gap(c);
    } else {
      for (auto& c : clients_) issue(c, start);
    }
    for (;;) {
      auto now = clock_type::now();
      if (open_loop()) {
        issue_due(now);
        now = clock_type::now();
      }
      if (!reset_done && now >= measure_from_) {
        // Not a blocking call: the clients' requests fall due meanwhile (open loop), and a
        // round trip to a loaded server took milliseconds. The reply comes through epoll.
        control_.write_all("RESET\n");
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = nullptr;  // the control connection
        if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, control_.fd, &ev) != 0) throw sys_error("epoll_ctl");
        reset_done = true;
        reset_unanswered_ = true;
      }
      if (now >= measure_until_ && !draining_) {
        draining_ = true;
        drain_deadline_ = now + opt_.drain_timeout;
      }
      if (idle_clients() == clients_.size()) break;
      if (draining_ && now >= drain_deadline_) {
        for (auto& c : clients_)
          if (c.busy())
            fail(c, "no answer to " + std::to_string(c.unacked.size() + c.acked.size()) +
                        " requests within the drain timeout");
        break;
      }
      epoll_event evs[64];
      const int n = wait_for_events(evs, 64, now);
      if (n < 0 && errno != EINTR) throw sys_error("epoll_wait");
      for (int i = 0; i < n; ++i) {
        if (evs[i].data.ptr == nullptr) {
          take_reset_reply();
          continue;
        }
        auto& c = *static_cast<client*>(evs[i].data.ptr);
        if (evs[i].events & EPOLLOUT) flush(c);
        if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) receive(c);
      }
    }
    const auto end = counted ? clock_type::now() : measure_until_;
    report_.measured_s = std::chrono::duration<double>(end - measure_from_).count();
    if (reset_unanswered_) take_reset_reply();
    report_.server_stats = control_.call("STATS");
    for (auto& c : clients_) {
      ::close(c.fd);
      c.fd = -1;
    }
    control_.call("QUIT");
    ::close(control_.fd);
    ::close(epoll_);
    return std::move(report_);
  }

 private:
  void login(client& c, std::size_t i) {
    c.index = i;
    char name[24];  // (snprintf: GCC 12 warns falsely, -Wrestrict, on "u" + std::to_string(i))
    std::snprintf(name, sizeof name, "u%zu", i);
    c.name = name;
    c.rng.seed(opt_.seed * 1000003 + i);
    c.arrivals.seed(opt_.seed * 1000003 + i + 0x9e3779b97f4a7c15ULL);
    c.fd = connect_to(opt_.host, opt_.port);
    blocking_line b{c.fd, {}};
    std::string ok = b.call("USER " + c.name);
    std::string_view v = ok;
    std::string prefix = "OK " + c.name + " ";
    if (v.substr(0, prefix.size()) != prefix) throw std::runtime_error("email driver: login of " + c.name + " answered '" + ok + "'");
    v.remove_prefix(prefix.size());
    std::from_chars(v.data(), v.data() + v.size(), c.mailbox_at_login);
    if (c.mailbox_at_login == 0) throw std::runtime_error("email driver: " + c.name + "'s mailbox is empty (start the server with --seed-messages >= 1)");
  }

  void expect(const std::string& got, std::string_view want, const char* what) {
    if (got != want) fail_global(std::string(what) + " answered '" + got.substr(0, 120) + "'");
  }

  std::size_t idle_clients() const {
    std::size_t n = 0;
    for (const auto& c : clients_) n += c.done && !c.busy() ? 1 : 0;
    return n;
  }

  bool open_loop() const { return opt_.rate_per_s > 0; }

  // The control connection is blocking: once epoll says the reply is there, reading it does
  // not wait (and after the run, it waits for it).
  void take_reset_reply() {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, control_.fd, nullptr);
    reset_unanswered_ = false;
    expect(control_.read_line(), "OK reset", "RESET");
  }

  // Open loop: an exponential gap with mean clients / rate (each client's share of the rate).
  clock_type::duration next_gap(client& c) {
    std::exponential_distribution<double> gap(opt_.rate_per_s / static_cast<double>(clients_.size()));
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(gap(c.arrivals)));
  }

  // Open loop: writes every request that is due, stamped with the time it was due.
  void issue_due(clock_type::time_point now) {
    for (auto& c : clients_) {
      while (!c.done && c.next_arrival <= now) {
        const auto due = c.next_arrival;
        c.next_arrival += next_gap(c);
        // (A failed write closes the client and drops its requests, this one too.)
        if (issue(c, due) && !c.unacked.empty() && due >= measure_from_ && due < measure_until_)
          report_.issue_lag_us.push_back(std::chrono::duration<double, std::micro>(c.unacked.back().written - due).count());
      }
    }
  }

  // Waits for socket events until the next request is due (open loop) or 5 ms (closed loop,
  // which only needs to look at the clock for the phases). epoll_pwait2 takes nanoseconds, so
  // the open loop does not round its arrivals to milliseconds; where the kernel lacks it
  // (ENOSYS), epoll_wait rounds up.
  int wait_for_events(epoll_event* evs, int max, clock_type::time_point now) {
    auto wait = std::chrono::nanoseconds(std::chrono::milliseconds(5));
    if (open_loop()) {
      for (const auto& c : clients_)
        if (!c.done) wait = std::min(wait, std::chrono::duration_cast<std::chrono::nanoseconds>(c.next_arrival - now));
      wait = std::max(wait, std::chrono::nanoseconds(0));
    }
    if (!no_pwait2_) {
      const timespec ts{static_cast<time_t>(wait.count() / 1000000000), static_cast<long>(wait.count() % 1000000000)};
      const int n = ::epoll_pwait2(epoll_, evs, max, &ts, nullptr);
      if (n >= 0 || errno != ENOSYS) return n;
      no_pwait2_ = true;
    }
    return ::epoll_wait(epoll_, evs, max, static_cast<int>((wait.count() + 999999) / 1000000));
  }

  void fail_global(std::string what) {
    ++report_.failure_count;
    if (report_.failures.size() < 20) report_.failures.push_back(std::move(what));
  }
  void fail(client& c, const std::string& what) { fail_global(c.name + ": " + what); }

  // Writes the client's next request, due at `due` (closed loop: now); false when the client
  // has sent all it will.
  bool issue(client& c, clock_type::time_point due) {
    const bool more = opt_.requests_per_client > 0 ? c.issued < opt_.requests_per_client : due < measure_until_;
    if (!more || c.done) {
      c.done = true;
      return false;
    }
    ++c.issued;
    ++report_.issued;
    outstanding o{};
    const unsigned dice = static_cast<unsigned>(c.rng() % 100);
    std::string line;
    if (dice < opt_.send_percent) {
      o.what = kind::send;
      const std::size_t to = c.rng() % clients_.size();
      line = "SEND u" + std::to_string(to) + " " + make_body(c.name, c.sent_messages++, opt_.message_bytes, opt_.seed);
    } else if (dice < opt_.send_percent + opt_.sort_percent) {
      o.what = kind::sort;
      static constexpr const char* keys[] = {"date", "sender", "size"};
      o.sort_key = keys[c.rng() % 3];
      line = "SORT " + o.sort_key;
    } else {
      o.what = kind::print;
      line = "PRINT " + std::to_string(c.rng() % c.mailbox_at_login);
    }
    line += '\n';
    o.written = clock_type::now();
    o.sent = open_loop() ? due : o.written;
    o.measured = o.sent >= measure_from_ && o.sent < measure_until_;
    c.unacked.push_back(std::move(o));
    if (c.out_at == c.out.size()) {
      c.out.clear();
      c.out_at = 0;
    }
    c.out += line;
    flush(c);
    return true;
  }

  void flush(client& c) {
    while (c.out_at < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0) {
        fail(c, std::string("write: ") + std::strerror(errno));
        close_client(c);
        return;
      }
      c.out_at += static_cast<std::size_t>(n);
    }
    const bool want = c.out_at < c.out.size();
    if (want != c.want_write) {
      epoll_event ev{};
      ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
      ev.data.ptr = &c;
      ::epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_write = want;
    }
  }

  void close_client(client& c) {
    if (c.fd >= 0) {
      ::epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
    }
    c.unacked.clear();
    c.acked.clear();
    c.done = true;
  }

  void receive(client& c) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        if (c.busy())
          fail(c, "the server closed the connection with " + std::to_string(c.unacked.size() + c.acked.size()) +
                      " requests unanswered");
        else if (!c.done) fail(c, "the server closed the connection");
        close_client(c);
        return;
      }
      c.in.append(buf, static_cast<std::size_t>(n));
    }
    std::size_t at = 0;
    for (std::size_t nl; (nl = c.in.find('\n', at)) != std::string::npos; at = nl + 1)
      on_line(c, std::string_view(c.in).substr(at, nl - at));
    c.in.erase(0, at);
  }

  void on_line(client& c, std::string_view line) {
    const auto now = clock_type::now();
    auto us = [&](clock_type::time_point from) { return std::chrono::duration<double, std::micro>(now - from).count(); };
    auto quote = [](std::string_view l) {  // (append: GCC 12 warns falsely, -Wrestrict, on "'" + std::string)
      std::string q(1, '\'');
      q.append(l.substr(0, 80));
      q += '\'';
      return q;
    };
    if (line.starts_with("DONE ")) {
      std::uint64_t seq = 0;
      std::string_view rest = line.substr(5);
      const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), seq);
      auto it = std::find_if(c.acked.begin(), c.acked.end(), [&](const outstanding& o) { return o.seq == seq; });
      if (ec != std::errc{} || end == rest.data() + rest.size() || *end != ' ' || it == c.acked.end()) {
        fail(c, "a DONE for no acknowledged request: " + quote(line));
        if (open_loop() || c.acked.empty()) return;
        it = c.acked.begin();  // closed loop: the one request waiting; go on with the next
      } else {
        check_done(c, *it, rest.substr(static_cast<std::size_t>(end - rest.data()) + 1));
      }
      ++report_.answered;
      if (it->measured) {
        ++report_.completed;
        (it->what == kind::send ? report_.send_us : it->what == kind::sort ? report_.sort_us : report_.print_us)
            .push_back(us(it->sent));
        if (it->what == kind::send) report_.send_from_write_us.push_back(us(it->written));
      }
      c.acked.erase(it);
      if (!open_loop()) issue(c, now);
      return;
    }
    if (c.unacked.empty()) {
      fail(c, "unexpected line " + quote(line));
      return;
    }
    outstanding o = std::move(c.unacked.front());
    c.unacked.pop_front();
    if (open_loop() && line.starts_with("ERR busy")) {  // refused: took no sequence number
      ++report_.answered;
      if (o.measured) ++report_.refused;
      return;
    }
    o.seq = c.next_seq++;
    if (line != "ACK " + std::to_string(o.seq)) {
      fail(c, "expected 'ACK " + std::to_string(o.seq) + "', got " + quote(line));
      ++report_.answered;
      if (!open_loop()) issue(c, now);
      return;
    }
    if (o.measured) {
      report_.resp_us.push_back(us(o.sent));
      report_.resp_from_write_us.push_back(us(o.written));
    }
    c.acked.push_back(std::move(o));
  }

  void check_done(client& c, const outstanding& o, std::string_view rest) {
    auto word = [&rest]() {
      auto sp = rest.find(' ');
      std::string_view w = rest.substr(0, sp);
      rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
      return w;
    };
    std::string_view what = word();
    const char* want = o.what == kind::send ? "SEND" : o.what == kind::sort ? "SORT" : "PRINT";
    if (what != want) {
      fail(c, std::string("request ") + std::to_string(o.seq) + ": expected " + want + ", got '" +
                  std::string(what) + " " + std::string(rest.substr(0, 60)) + "'");
      return;
    }
    if (o.what == kind::send) {
      if (word().empty() || !rest.empty()) fail(c, "SEND: malformed DONE");
    } else if (o.what == kind::print) {
      std::string_view id = word();
      if (id.empty() || !body_is_intact(rest)) fail(c, "PRINT of message " + std::string(id) + ": the text is damaged");
    } else {
      if (word() != o.sort_key) fail(c, "SORT: wrong key");
      std::size_t n = 0;
      auto count = word();
      std::from_chars(count.data(), count.data() + count.size(), n);
      std::size_t seen = 0;
      std::string prev_text;
      unsigned long long prev_num = 0;
      for (std::string_view e = word(); !e.empty(); e = word(), ++seen) {
        auto colon = e.find(':');
        if (colon == std::string_view::npos) {
          fail(c, "SORT: malformed entry");
          return;
        }
        std::string_view k = e.substr(colon + 1);
        if (o.sort_key == "sender") {
          if (seen > 0 && std::string(k) < prev_text) fail(c, "SORT by sender: out of order");
          prev_text = std::string(k);
        } else {
          unsigned long long v = 0;
          std::from_chars(k.data(), k.data() + k.size(), v);
          if (seen > 0 && v < prev_num) fail(c, "SORT by " + o.sort_key + ": out of order");
          prev_num = v;
        }
      }
      if (seen != n || n == 0) fail(c, "SORT: " + std::to_string(seen) + " entries, header says " + std::to_string(n));
    }
  }

  const driver_options opt_;
  blocking_line control_{-1, {}};
  std::vector<client> clients_;
  int epoll_ = -1;
  clock_type::time_point measure_from_, measure_until_, drain_deadline_;
  bool draining_ = false;
  bool no_pwait2_ = false;
  bool reset_unanswered_ = false;
  driver_report report_;
};

}  // namespace

driver_report run_driver(const driver_options& options) { return driver(options).run(); }

}  // namespace email
