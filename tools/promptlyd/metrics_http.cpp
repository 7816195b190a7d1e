#include "metrics_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <httplib.h>

#include "http_api.hpp"
#include "server/daemon/metrics.hpp"
#include "server/daemon/socket.hpp"

namespace promptly::server::daemon {

namespace {

using steady = std::chrono::steady_clock;

// Connections waiting for a thread at most; one more gets a 503 and is
// closed, so a flood costs neither memory nor threads.
constexpr std::size_t max_queued_connections = 1024;

// Connections waiting for their request's head (new ones, and kept ones whose
// next request has begun) at most; one more closes the one waiting longest
// with a 503, so a flood of connections that never finish their headers
// holds a bounded number of descriptors and never a thread.
constexpr std::size_t max_waiting_requests = 1024;

// Set by the task queue while it runs a connection it refuses (httplib's
// task is an opaque closure: this is how the decision reaches the code that
// serves it).
thread_local bool drop_current_connection = false;

// Whether the connection of the request this thread serves stays open after
// its response: set before the request, cleared by the routing hooks when its
// end is not certain or the idle set is full.
thread_local bool keep_current_connection = false;

// The HTTP connections of the process (both endpoints), for /metrics.
struct connection_counts {
  std::atomic<std::int64_t> open{0};
  std::atomic<std::uint64_t> refused{0};    // closed with a 503: no room to wait
  std::atomic<std::uint64_t> timed_out{0};  // request not here within request_timeout
};
connection_counts counts;

// What a connection gets when it is closed before a request of it was read:
// the line protocol's "rejected" (full: try again) and a request timeout.
std::string canned_reply(const std::string& status, const std::string& extra, const std::string& code,
                         const std::string& message) {
  const std::string body = R"({"ok":false,"error":{"code":")" + code + R"(","message":")" + message + "\"}}";
  return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + extra +
         "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}
const std::string refused_reply = canned_reply("503 Service Unavailable", "Retry-After: 1\r\n", "rejected",
                                               "too many HTTP connections waiting; retry");
const std::string timed_out_reply =
    canned_reply("408 Request Timeout", "", "bad_request", "the request did not arrive within the request timeout");

// One client connection across its requests: the socket, its TLS session and
// the bytes read ahead of the current request. Owned by one party at a time:
// the thread serving it, the task queue, or a waiting set (each hands it on
// under its own lock), so its fields need no lock of their own.
struct connection {
  connection(int fd, bool tls) : fd(fd), tls(tls) { counts.open.fetch_add(1, std::memory_order_relaxed); }
  ~connection() {
    if (ssl) {
      if (handshaken) SSL_shutdown(ssl);  // one try: the close below ends the connection either way
      SSL_free(ssl);
      ERR_clear_error();
    }
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    counts.open.fetch_sub(1, std::memory_order_relaxed);
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  // Whether the next request's bytes are already here (pipelined): then
  // waiting for the socket to be readable would wait for nothing.
  [[nodiscard]] bool read_ahead() const { return off < len || (ssl && SSL_pending(ssl) > 0); }

  const int fd;
  const bool tls;
  SSL* ssl = nullptr;
  bool handshaken = false;
  unsigned served = 0;  // requests taken
  // When the current request must be all here, if a waiting set set it.
  steady::time_point read_by{};
  char buf[4096];
  std::size_t off = 0, len = 0;
#ifndef NDEBUG
  std::atomic<bool> in_service{false};  // asserts the one-owner rule
#endif
};

using connection_ptr = std::shared_ptr<connection>;

// The counts in Prometheus' text format, after render_metrics()'s.
std::string render_connection_counts() {
  auto one = [](const char* name, const char* type, const char* help, auto v) {
    return std::string("# HELP ") + name + ' ' + help + "\n# TYPE " + name + ' ' + type + '\n' + name + ' ' +
           std::to_string(v) + '\n';
  };
  return one("promptly_http_connections", "gauge",
             "HTTP connections open: served, waiting for a thread, for their request, or between requests.",
             counts.open.load(std::memory_order_relaxed)) +
         one("promptly_http_connections_refused_total", "counter",
             "HTTP connections answered 503 and closed: too many waiting for a thread or for their request.",
             counts.refused.load(std::memory_order_relaxed)) +
         one("promptly_http_requests_timed_out_total", "counter",
             "HTTP connections answered 408 and closed: the request head did not arrive within the request timeout.",
             counts.timed_out.load(std::memory_order_relaxed));
}

// Answers c (none of whose requests is being served) with a canned reply
// before it closes, if it speaks plain HTTP (a TLS peer could not read it).
void answer(connection& c, const std::string& reply) {
  if (c.tls) return;
  (void)::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  // Closing a socket with unread bytes resets it, and a reset can discard
  // the reply before the peer reads it: read what came (a bounded amount).
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(c.fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
}

// How far c's next request has come, reading what its peer sent (without
// blocking) into c's buffer: `head` once the request line and headers are
// all here (up to the empty line) or fill the buffer (a longer head is read
// on a thread, within the request's deadline). Over TLS the bytes stay in the
// socket for the TLS session: any byte counts as the head.
enum class progress { none, partial, head, closed };
progress read_more(connection& c) {
  if (c.tls) {
    if (c.ssl && SSL_pending(c.ssl) > 0) return progress::head;
    char b;
    const ssize_t n = ::recv(c.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return progress::head;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ? progress::closed : progress::none;
  }
  if (c.off > 0) {
    std::memmove(c.buf, c.buf + c.off, c.len - c.off);
    c.len -= c.off;
    c.off = 0;
  }
  bool closed = false;
  if (c.len < sizeof c.buf) {
    const ssize_t n = ::recv(c.fd, c.buf + c.len, sizeof c.buf - c.len, MSG_DONTWAIT);
    if (n > 0) c.len += static_cast<std::size_t>(n);
    else closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  if (c.len == sizeof c.buf) return progress::head;
  const std::string_view v(c.buf, c.len);
  for (auto i = v.find('\n'); i != std::string_view::npos; i = v.find('\n', i + 1)) {
    const auto j = i + 1 < v.size() && v[i + 1] == '\r' ? i + 2 : i + 1;  // CRLF CRLF, or bare LFs
    if (j < v.size() && v[j] == '\n') return progress::head;
  }
  if (closed) return progress::closed;
  return c.len > 0 ? progress::partial : progress::none;
}

// Connections waiting without a thread, watched by one poller thread with
// epoll. Two kinds, one set each:
// * between requests (keep-alive), until the next request's first bytes
//   arrive (then handed on: to `ready` if its head is all here, else to
//   `begun`, the request set) or idle_timeout passes (closed without a word,
//   as HTTP allows); at most max of them: park() refuses more;
// * a request's head (a new connection, or a kept one whose next request has
//   begun), until the head is all here (then to `ready`, which queues it for
//   a thread) or `timeout` has passed since it came (408, closed); at most
//   max: one more closes the one waiting longest with a 503.
// All of a set's connections wait the same timeout, so its list in arrival
// order is also in deadline order.
class waiting_set {
 public:
  enum class kind { between_requests, request_head };
  waiting_set(kind k, steady::duration timeout, std::size_t max, std::function<void(connection_ptr)> ready,
              std::function<void(connection_ptr)> begun = {})
      : kind_(k), timeout_(timeout), max_(max), ready_(std::move(ready)), begun_(std::move(begun)) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_ < 0 || wake_ < 0) throw std::runtime_error(std::string("HTTP waiting connections: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    poller_ = std::thread([this] { poll_loop(); });
  }
  ~waiting_set() {
    close();
    ::close(epoll_);
    ::close(wake_);
  }
  waiting_set(const waiting_set&) = delete;
  waiting_set& operator=(const waiting_set&) = delete;

  // Takes c. Between requests: false (c stays the caller's, to close) if max
  // connections wait already or the set is closed. A request's head: c's
  // request must be all here within the timeout; if max wait already, the
  // one waiting longest is answered 503 and closed to make room.
  bool park(const connection_ptr& c) {
    connection_ptr evicted;
    {
      std::lock_guard lock(mu_);
      if (closed_) return false;
      if (waiting_.size() >= max_) {
        if (kind_ == kind::between_requests || waiting_.empty()) return false;
        evicted = take(waiting_.front().c->fd);
      }
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = c->fd;
      if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, c->fd, &ev) != 0) return false;
      const auto deadline = steady::now() + timeout_;
      if (kind_ == kind::request_head) c->read_by = deadline;
      waiting_.push_back({c, deadline});
      by_fd_[c->fd] = std::prev(waiting_.end());
      assert(by_fd_.size() == waiting_.size() && waiting_.size() <= max_ && "one entry per waiting connection, at most max");
      if (waiting_.size() == 1) wake();  // the poller had no deadline to wait for
    }
    if (evicted) {
      counts.refused.fetch_add(1, std::memory_order_relaxed);
      answer(*evicted, refused_reply);
    }
    return true;
  }
  [[nodiscard]] bool full() const {
    std::lock_guard lock(mu_);
    return waiting_.size() >= max_;
  }
  // Closes every waiting connection and stops the poller; park() refuses from now on.
  void close() {
    std::list<entry> left;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      left.swap(waiting_);
      by_fd_.clear();
      wake();
    }
    poller_.join();
  }

 private:
  struct entry {
    connection_ptr c;
    steady::time_point deadline;
  };

  void wake() {
    const std::uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }
  // Removes fd's connection from the set (mu_ held); null if it is not there.
  connection_ptr take(int fd) {
    const auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) return nullptr;
    connection_ptr c = std::move(it->second->c);
    waiting_.erase(it->second);
    by_fd_.erase(it);
    assert(by_fd_.size() == waiting_.size() && "one entry per waiting connection");
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    return c;
  }

  void poll_loop() {
    std::vector<epoll_event> events(256);
    for (;;) {
      int timeout_ms = -1;
      {
        std::lock_guard lock(mu_);
        if (closed_) return;
        if (!waiting_.empty()) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(waiting_.front().deadline - steady::now());
          timeout_ms = static_cast<int>(std::clamp<long long>(left.count(), 0, 60'000));
        }
      }
      const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), timeout_ms);
      std::vector<connection_ptr> ready, begun, ended, late;
      {
        std::lock_guard lock(mu_);
        if (closed_) return;
        // Reads what came (a nonblocking recv each, under the lock: park()
        // waits at most that long).
        auto sort = [&](int fd, bool past_deadline) {
          const auto it = by_fd_.find(fd);
          if (it == by_fd_.end()) return;
          const progress p = read_more(*it->second->c);
          if (p == progress::head) ready.push_back(take(fd));
          else if (p == progress::closed) ended.push_back(take(fd));
          else if (kind_ == kind::between_requests && p == progress::partial) begun.push_back(take(fd));
          else if (past_deadline) (kind_ == kind::request_head ? late : ended).push_back(take(fd));
        };
        for (int i = 0; i < n; ++i) {
          const int fd = events[static_cast<std::size_t>(i)].data.fd;
          if (fd == wake_) {
            std::uint64_t v;
            (void)!::read(wake_, &v, sizeof v);
          } else {
            sort(fd, false);
          }
        }
        // Past its deadline: what came since epoll_wait returned is still
        // taken; else closed (a request's head, with a 408).
        const auto now = steady::now();
        while (!waiting_.empty() && waiting_.front().deadline <= now) sort(waiting_.front().c->fd, true);
      }
      for (auto& c : ready) ready_(std::move(c));
      for (auto& c : begun) begun_(std::move(c));
      for (auto& c : late) {
        counts.timed_out.fetch_add(1, std::memory_order_relaxed);
        answer(*c, timed_out_reply);
      }
      // `ended` and `late` close their connections here, outside the lock.
    }
  }

  const kind kind_;
  const steady::duration timeout_;
  const std::size_t max_;
  const std::function<void(connection_ptr)> ready_, begun_;
  int epoll_ = -1, wake_ = -1;
  mutable std::mutex mu_;
  // Guarded by mu_:
  std::list<entry> waiting_;  // in deadline order
  std::unordered_map<int, std::list<entry>::iterator> by_fd_;
  bool closed_ = false;
  std::thread poller_;
};

// httplib's task queue: a thread per connection being served, started on
// demand up to max_threads and kept; beyond, connections whose request head
// is here wait first come first served, at most max_queued_connections of
// them. New connections are sorted on httplib's accept thread itself (to a
// thread, or to the request set), without waiting for anything, so a flood
// of them never fills the queue ahead of those with a request to serve. It
// also owns the waiting sets, which it closes first when it shuts down, so
// no connection is handed back to it after its threads have gone.
class growing_pool final : public httplib::TaskQueue {
 public:
  growing_pool(unsigned max_threads, const metrics_http_options& opts, std::function<void(connection_ptr)> serve)
      : max_threads_(max_threads) {
    auto to_thread = [this, serve](connection_ptr c) { submit([serve, c]() mutable { serve(std::move(c)); }); };
    requests_.emplace(waiting_set::kind::request_head, opts.request_timeout, max_waiting_requests, to_thread);
    if (opts.idle_timeout.count() > 0 && opts.max_idle > 0)
      idle_conns_.emplace(waiting_set::kind::between_requests, opts.idle_timeout, opts.max_idle, to_thread,
                          [this](connection_ptr c) { (void)requests_->park(c); });
  }
  ~growing_pool() override { shutdown(); }

  // A new connection from httplib's accept loop: sorted at once
  // (process_and_close_socket below reads without blocking).
  void enqueue(std::function<void()> fn) override { fn(); }
  // A connection whose request head is here, to serve on a thread.
  void submit(std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      // Stopping: a connection handed back by a thread still serving is
      // refused by that thread's next turn.
      tasks_.push_back({std::move(fn), stopping_ || tasks_.size() >= max_queued_connections});
      if (!stopping_ && idle_threads_ < tasks_.size() && threads_.size() < max_threads_)
        threads_.emplace_back([this] { work(); });
    }
    cv_.notify_one();
  }
  void shutdown() override {
    if (idle_conns_) idle_conns_->close();
    requests_->close();
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
  }
  // The set between requests, or null without keep-alive.
  [[nodiscard]] waiting_set* idle() { return idle_conns_ ? &*idle_conns_ : nullptr; }
  // The set of connections waiting for a request's head.
  [[nodiscard]] waiting_set& requests() { return *requests_; }

 private:
  struct task {
    std::function<void()> fn;
    bool drop;
  };
  void work() {
    for (;;) {
      task t;
      {
        std::unique_lock lock(mu_);
        ++idle_threads_;
        cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        --idle_threads_;
        if (tasks_.empty()) return;  // stopping, nothing left
        t = std::move(tasks_.front());
        tasks_.pop_front();
        // Stopping: what still waits for a thread is refused, so the
        // daemon's exit waits only for the connections being served.
        t.drop = t.drop || stopping_;
      }
      drop_current_connection = t.drop;
      t.fn();
    }
  }

  const unsigned max_threads_;
  std::optional<waiting_set> requests_;
  std::optional<waiting_set> idle_conns_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_ (threads_ is only joined after stopping_ is set):
  std::deque<task> tasks_;
  std::size_t idle_threads_ = 0;  // threads waiting for a task
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// A connection's socket stream for one request: reads end at one deadline
// and writes at another, however the peer paces its bytes (httplib's own
// timeouts are per read, so a byte every few seconds would keep a connection
// forever). Bytes read ahead stay in the connection for its next request.
class deadline_stream final : public httplib::Stream {
 public:
  deadline_stream(connection& c, steady::time_point read_by, steady::duration write_timeout)
      : c_(c), read_by_(read_by), write_timeout_(write_timeout) {}

  bool is_readable() const override {
    return c_.off < c_.len || (c_.ssl && SSL_pending(c_.ssl) > 0) || wait(POLLIN, read_by_);
  }
  bool is_writable() const override { return wait(POLLOUT, steady::now() + write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    // Buffered: httplib reads its request line and headers a byte at a time.
    if (c_.off == c_.len) {
      const ssize_t n = c_.ssl ? tls_io(false, c_.buf, sizeof c_.buf, read_by_) : plain_recv();
      if (n <= 0) return n;
      c_.off = 0;
      c_.len = static_cast<std::size_t>(n);
    }
    const std::size_t k = std::min(size, c_.len - c_.off);
    std::memcpy(ptr, c_.buf + c_.off, k);
    c_.off += k;
    return static_cast<ssize_t>(k);
  }
  ssize_t write(const char* ptr, size_t size) override {
    // Per write: a long wait or an event stream writes late, but each of
    // its writes must get through in time.
    const auto by = steady::now() + write_timeout_;
    if (c_.ssl) return tls_io(true, const_cast<char*>(ptr), size, by);
    if (!wait(POLLOUT, by)) return -1;
    ssize_t n;
    do n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }
  // Serve TLS on the (non-blocking) socket: the handshake must end by read_by.
  bool start_tls(SSL* ssl) {
    c_.ssl = ssl;
    for (;;) {
      const int r = SSL_accept(ssl);
      if (r == 1) return c_.handshaken = true;
      if (!wait_for_tls(SSL_get_error(ssl, r), read_by_)) return false;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return c_.fd; }

 private:
  ssize_t plain_recv() {
    if (!wait(POLLIN, read_by_)) return -1;
    ssize_t n;
    do n = ::recv(c_.fd, c_.buf, sizeof c_.buf, 0);
    while (n < 0 && errno == EINTR);
    return n;
  }
  // One SSL_read or SSL_write, waiting (until `by`) for what the record
  // layer needs: a TLS read may need to write and a write to read.
  ssize_t tls_io(bool writing, char* p, std::size_t n, steady::time_point by) {
    for (;;) {
      const int len = static_cast<int>(std::min<std::size_t>(n, 1 << 30));
      const int r = writing ? SSL_write(c_.ssl, p, len) : SSL_read(c_.ssl, p, len);
      if (r > 0) return r;
      const int e = SSL_get_error(c_.ssl, r);
      if (e == SSL_ERROR_ZERO_RETURN) return 0;
      if (!wait_for_tls(e, by)) return -1;
    }
  }
  bool wait_for_tls(int ssl_error, steady::time_point by) const {
    ERR_clear_error();
    if (ssl_error == SSL_ERROR_WANT_READ) return wait(POLLIN, by);
    if (ssl_error == SSL_ERROR_WANT_WRITE) return wait(POLLOUT, by);
    return false;
  }

  // Whether the socket is ready for `events` before `by`.
  bool wait(short events, steady::time_point by) const {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(by - steady::now()).count();
      if (left <= 0) return false;
      pollfd p{c_.fd, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60'000)));
      if (r > 0) return (p.revents & (events | POLLHUP)) != 0;
      if (r < 0 && errno != EINTR) return false;
    }
  }
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ip.clear();
    port = 0;
    if (get(c_.fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  connection& c_;
  steady::time_point read_by_;
  steady::duration write_timeout_;
};

// Whether the request's end is certain, so the bytes after it are the next
// request's: no Transfer-Encoding (httplib's chunked reader accepts malformed
// framing), at most one Content-Length, all digits, and its body read (not
// so when a route answered before reading it, e.g. a 401, or the method takes
// no body and httplib did not read one).
bool request_end_is_certain(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return false;
  const auto n = req.get_header_value_count("Content-Length");
  if (n == 0) return true;
  if (n > 1) return false;
  const std::string v = req.get_header_value("Content-Length");
  if (v.empty() || v.size() > 19 || !std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return false;
  return std::stoull(v) == req.body.size();
}

}  // namespace

// httplib's server with the deadlines above and keep-alive through the idle
// set: each request is read through a deadline_stream.
class metrics_http::server final : public httplib::Server {
 public:
  explicit server(metrics_http_options opts) : opts_(opts) {
    keep_alive_ = opts_.idle_timeout.count() > 0 && opts_.max_idle > 0 && opts_.max_requests > 1;
    // What the responses' Keep-Alive header announces.
    set_keep_alive_timeout(static_cast<time_t>(std::chrono::ceil<std::chrono::seconds>(opts_.idle_timeout).count()));
    set_keep_alive_max_count(opts_.max_requests);
    // Every response passes here just before its head is written: the last
    // chance to say the connection closes.
    set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!keep_current_connection) return;
      const bool framing_error = res.status == 400 || res.status == 413 || res.status == 414;
      if (framing_error || !request_end_is_certain(req) || (pool_->idle() && pool_->idle()->full())) {
        keep_current_connection = false;
        res.headers.erase("Keep-Alive");
        res.set_header("Connection", "close");
      }
    });
    new_task_queue = [this] {
      pool_ = new growing_pool(opts_.max_threads, opts_, [this](connection_ptr c) { serve(std::move(c)); });
      return pool_;
    };
    if (opts_.tls_cert.empty()) return;
    tls_ = SSL_CTX_new(TLS_server_method());
    if (!tls_) throw std::runtime_error("TLS: cannot create a context");
    SSL_CTX_set_min_proto_version(tls_, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(tls_, opts_.tls_cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls_, opts_.tls_key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(tls_) != 1) {
      char why[256];
      ERR_error_string_n(ERR_get_error(), why, sizeof why);
      SSL_CTX_free(tls_);
      throw std::runtime_error("TLS: cannot use certificate " + opts_.tls_cert + " with key " + opts_.tls_key + ": " + why);
    }
  }
  ~server() override {
    if (tls_) SSL_CTX_free(tls_);
  }
  server(const server&) = delete;
  server& operator=(const server&) = delete;
  // httplib listens with a backlog of 5: connections beyond it wait for a
  // SYN retransmission (1 s and more), probes included. Linux takes a new
  // backlog from a second listen().
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }

 private:
  // A new connection, on httplib's accept thread (growing_pool::enqueue).
  bool process_and_close_socket(socket_t sock) override {
    // httplib writes a response's head and body apart: with Nagle's
    // algorithm a kept connection's body would wait for the peer's delayed
    // ACK of the head (40 ms on Linux).
    const int one = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    serve_when_head_arrives(std::make_shared<connection>(sock, tls_ != nullptr));
    return true;
  }

  // c's next request has begun, or may: once its head is all here, c is
  // served on the next free thread; until then it waits in the request set,
  // holding no thread (a client that trickles its headers, Slowloris, holds
  // only a descriptor).
  void serve_when_head_arrives(connection_ptr c) {
    switch (read_more(*c)) {
      case progress::head:
        return pool_->submit([this, c]() mutable { serve(std::move(c)); });  // behind those already waiting
      case progress::closed: return;
      default: (void)pool_->requests().park(c);  // refused (stopping): c closes here
    }
  }

  // Serves c's next request on this (pool) thread, then hands c on: on
  // towards a thread again if its next request is already read ahead, else
  // to the idle set; or closes it (dropping c) when it must not stay open.
  void serve(connection_ptr c) {
    if (drop_current_connection) {
      counts.refused.fetch_add(1, std::memory_order_relaxed);
      answer(*c, refused_reply);
      return;
    }
#ifndef NDEBUG
    assert(!c->in_service.exchange(true) && "a connection is served by one thread at a time");
#endif
    // The request set's deadline for a head that came in pieces, else from now.
    const auto read_by = c->read_by != steady::time_point{} ? c->read_by : steady::now() + opts_.request_timeout;
    c->read_by = {};
    deadline_stream strm(*c, read_by, opts_.response_timeout);
    if (tls_ && !c->ssl) {
      ::fcntl(c->fd, F_SETFL, ::fcntl(c->fd, F_GETFL) | O_NONBLOCK);
      SSL* ssl = SSL_new(tls_);
      if (!ssl) return;
      if (SSL_set_fd(ssl, c->fd) != 1 || !strm.start_tls(ssl)) {
        c->ssl = ssl;  // freed with c
        return;
      }
    }
    ++c->served;
    const bool last = !keep_alive_ || c->served >= opts_.max_requests;
    keep_current_connection = !last;
    bool closed = false;
    const bool ok = process_request(strm, last, closed, [](httplib::Request&) {});
    const bool keep = ok && !closed && keep_current_connection;
    keep_current_connection = false;
#ifndef NDEBUG
    c->in_service.store(false);
#endif
    if (!keep) return;
    if (c->read_ahead()) return serve_when_head_arrives(std::move(c));  // pipelined
    (void)pool_->idle()->park(c);  // refused (full, stopping): c closes here
  }

  const metrics_http_options opts_;
  bool keep_alive_ = false;
  SSL_CTX* tls_ = nullptr;
  // Made by httplib's listen thread before it accepts; outlives every serve().
  growing_pool* pool_ = nullptr;
};

metrics_http::metrics_http(protocol::service& svc, unsigned workers, const std::string& spec, metrics_http_options opts)
    : http_(std::make_unique<server>(opts)), api_(opts.api) {
  const auto hp = parse_host_port(spec);
  if (!is_loopback(hp.host) && opts.tls_cert.empty())
    throw std::runtime_error(spec + " refused: without TLS this endpoint listens on loopback only");
  if (api_) api_->install(*http_);
  if (!opts.tls_cert.empty()) scheme_ = "https";
  http_->Get("/metrics", [&svc, workers](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_metrics(svc, workers) + render_connection_counts(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  http_->Get("/readyz", [&svc](const httplib::Request&, httplib::Response& res) {
    const auto r = check_ready(svc);
    res.status = r.ready ? 200 : 503;
    res.set_content(r.reason + "\n", "text/plain");
  });
  const std::string host = hp.host == "localhost" ? "127.0.0.1" : hp.host;
  if (hp.port == 0) {
    const int p = http_->bind_to_any_port(host);
    if (p < 0) throw std::runtime_error("cannot bind the metrics endpoint to " + spec);
    port_ = static_cast<std::uint16_t>(p);
  } else {
    if (!http_->bind_to_port(host, hp.port)) throw std::runtime_error("cannot bind the metrics endpoint to " + spec);
    port_ = hp.port;
  }
  http_->widen_backlog();
  host_ = host;
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

metrics_http::~metrics_http() {
  if (api_) api_->stop();
  http_->stop();
  thread_.join();
}

std::string metrics_http::url() const { return scheme_ + "://" + host_ + ":" + std::to_string(port_); }

}  // namespace promptly::server::daemon
