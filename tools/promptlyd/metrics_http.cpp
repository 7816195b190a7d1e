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

// Connections waiting for a thread at most; one more is closed unread, so a
// flood costs descriptors, never memory.
constexpr std::size_t max_queued_connections = 1024;

// Set by the task queue while it runs a connection it closes unread
// (httplib's task is an opaque closure: this is how the decision reaches
// the code that serves it).
thread_local bool drop_current_connection = false;

// Whether the connection of the request this thread serves stays open after
// its response: set before the request, cleared by the routing hooks when its
// end is not certain or the idle set is full.
thread_local bool keep_current_connection = false;

// One client connection across its requests: the socket, its TLS session and
// the bytes read ahead of the current request. Owned by one party at a time:
// the thread serving it, the task queue, or the idle set (each hands it on
// under its own lock), so its fields need no lock of their own.
struct connection {
  explicit connection(int fd) : fd(fd) {}
  ~connection() {
    if (ssl) {
      if (handshaken) SSL_shutdown(ssl);  // one try: the close below ends the connection either way
      SSL_free(ssl);
      ERR_clear_error();
    }
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  // Whether the next request's bytes are already here (pipelined): then
  // waiting for the socket to be readable would wait for nothing.
  [[nodiscard]] bool read_ahead() const { return off < len || (ssl && SSL_pending(ssl) > 0); }

  const int fd;
  SSL* ssl = nullptr;
  bool handshaken = false;
  unsigned served = 0;  // requests taken
  char buf[4096];
  std::size_t off = 0, len = 0;
#ifndef NDEBUG
  std::atomic<bool> in_service{false};  // asserts the one-owner rule
#endif
};

using connection_ptr = std::shared_ptr<connection>;

// Connections between requests (keep-alive), holding no thread: one poller
// thread watches them with epoll and hands each back to `resume` when its
// next request's bytes arrive, or closes it idle_timeout after it came (or
// when its peer closes). Every connection waits the same idle_timeout, so the
// list in arrival order is also in deadline order.
class idle_set {
 public:
  idle_set(steady::duration idle_timeout, std::size_t max_idle, std::function<void(connection_ptr)> resume)
      : idle_timeout_(idle_timeout), max_idle_(max_idle), resume_(std::move(resume)) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_ < 0 || wake_ < 0) throw std::runtime_error(std::string("HTTP idle connections: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    poller_ = std::thread([this] { poll_loop(); });
  }
  ~idle_set() {
    close();
    ::close(epoll_);
    ::close(wake_);
  }
  idle_set(const idle_set&) = delete;
  idle_set& operator=(const idle_set&) = delete;

  // Takes c until its next request; false (c stays the caller's, to close)
  // if max_idle connections wait already or the set is closed.
  bool park(const connection_ptr& c) {
    std::lock_guard lock(mu_);
    if (closed_ || waiting_.size() >= max_idle_) return false;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, c->fd, &ev) != 0) return false;
    waiting_.push_back({c, steady::now() + idle_timeout_});
    by_fd_[c->fd] = std::prev(waiting_.end());
    assert(by_fd_.size() == waiting_.size() && "one entry per waiting connection");
    if (waiting_.size() == 1) wake();  // the poller had no deadline to wait for
    return true;
  }
  [[nodiscard]] bool full() const {
    std::lock_guard lock(mu_);
    return waiting_.size() >= max_idle_;
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
  // Whether the peer has sent bytes (a request to serve) rather than closed.
  static bool has_bytes(int fd) {
    char b;
    return ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  void poll_loop() {
    std::vector<epoll_event> events(64);
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
      std::vector<connection_ptr> ready, ended;
      {
        std::lock_guard lock(mu_);
        if (closed_) return;
        for (int i = 0; i < n; ++i) {
          const int fd = events[static_cast<std::size_t>(i)].data.fd;
          if (fd == wake_) {
            std::uint64_t v;
            (void)!::read(wake_, &v, sizeof v);
            continue;
          }
          if (connection_ptr c = take(fd)) (has_bytes(fd) ? ready : ended).push_back(std::move(c));
        }
        // Past its deadline with nothing sent: closed. (Bytes that came since
        // epoll_wait returned are served rather than cut off.)
        const auto now = steady::now();
        while (!waiting_.empty() && waiting_.front().deadline <= now) {
          const int fd = waiting_.front().c->fd;
          connection_ptr c = take(fd);
          (has_bytes(fd) ? ready : ended).push_back(std::move(c));
        }
      }
      for (auto& c : ready) resume_(std::move(c));
      // `ended` closes its connections here, outside the lock.
    }
  }

  const steady::duration idle_timeout_;
  const std::size_t max_idle_;
  const std::function<void(connection_ptr)> resume_;
  int epoll_ = -1, wake_ = -1;
  mutable std::mutex mu_;
  // Guarded by mu_:
  std::list<entry> waiting_;  // in deadline order
  std::unordered_map<int, std::list<entry>::iterator> by_fd_;
  bool closed_ = false;
  std::thread poller_;
};

// httplib's task queue: a thread per connection being served, started on
// demand up to max_threads and kept; beyond, connections wait first come
// first served, at most max_queued_connections of them. With keep-alive it
// also owns the idle set, which it closes first when it shuts down, so no
// connection is handed back to it after its threads have gone.
class growing_pool final : public httplib::TaskQueue {
 public:
  growing_pool(unsigned max_threads, const metrics_http_options& opts, std::function<void(connection_ptr)> serve)
      : max_threads_(max_threads) {
    if (opts.idle_timeout.count() > 0 && opts.max_idle > 0)
      idle_conns_.emplace(opts.idle_timeout, opts.max_idle, [this, serve](connection_ptr c) {
        enqueue([serve, c]() mutable { serve(std::move(c)); });
      });
  }
  ~growing_pool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mu_);
      // Stopping: a connection handed back by a thread still serving is
      // closed unread by that thread's next turn.
      tasks_.push_back({std::move(fn), stopping_ || tasks_.size() >= max_queued_connections});
      if (!stopping_ && idle_threads_ < tasks_.size() && threads_.size() < max_threads_)
        threads_.emplace_back([this] { work(); });
    }
    cv_.notify_one();
  }
  void shutdown() override {
    if (idle_conns_) idle_conns_->close();
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
  }
  // The idle set, or null without keep-alive.
  [[nodiscard]] idle_set* idle() { return idle_conns_ ? &*idle_conns_ : nullptr; }

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
        // Stopping: what still waits for a thread is closed unread, so the
        // daemon's exit waits only for the connections being served.
        t.drop = t.drop || stopping_;
      }
      drop_current_connection = t.drop;
      t.fn();
    }
  }

  const unsigned max_threads_;
  std::optional<idle_set> idle_conns_;
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
  // A new connection from httplib's accept loop (on a pool thread).
  bool process_and_close_socket(socket_t sock) override {
    // httplib writes a response's head and body apart: with Nagle's
    // algorithm a kept connection's body would wait for the peer's delayed
    // ACK of the head (40 ms on Linux).
    const int one = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    serve(std::make_shared<connection>(sock));
    return true;
  }

  // Serves c's next request on this (pool) thread, then hands c on: to the
  // queue again if its next request is already read ahead, else to the idle
  // set; or closes it (dropping c) when it must not stay open.
  void serve(connection_ptr c) {
    if (drop_current_connection) return;
#ifndef NDEBUG
    assert(!c->in_service.exchange(true) && "a connection is served by one thread at a time");
#endif
    const auto read_by = steady::now() + opts_.request_timeout;
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
    if (c->read_ahead()) {
      pool_->enqueue([this, c]() mutable { serve(std::move(c)); });  // behind those already waiting
      return;
    }
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
    res.set_content(render_metrics(svc, workers), "text/plain; version=0.0.4; charset=utf-8");
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
