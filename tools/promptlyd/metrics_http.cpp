#include "metrics_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <httplib.h>

#include "http_api.hpp"
#include "server/daemon_metrics.hpp"
#include "server/daemon_socket.hpp"

namespace promptly::server::daemon {

namespace {

using steady = std::chrono::steady_clock;

// Connections waiting for a thread at most; one more is closed unread, so a
// flood costs descriptors, never memory.
constexpr std::size_t max_queued_connections = 1024;

// Set by the task queue while it runs a connection it closes unread
// (httplib's task is an opaque closure: this is how the decision reaches
// process_and_close_socket).
thread_local bool drop_current_connection = false;

// httplib's task queue: a thread per connection being served, started on
// demand up to max_threads and kept; beyond, connections wait first come
// first served, at most max_queued_connections of them.
class growing_pool final : public httplib::TaskQueue {
 public:
  explicit growing_pool(unsigned max_threads) : max_threads_(max_threads) {}
  ~growing_pool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back({std::move(fn), tasks_.size() >= max_queued_connections});
      if (idle_ < tasks_.size() && threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
    }
    cv_.notify_one();
  }
  void shutdown() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
  }

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
        ++idle_;
        cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        --idle_;
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
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_ (threads_ is only joined after stopping_ is set):
  std::deque<task> tasks_;
  std::size_t idle_ = 0;  // threads waiting for a task
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// A socket stream whose reads end at one deadline and writes at another,
// however the peer paces its bytes (httplib's own timeouts are per read, so
// a byte every few seconds would keep a connection forever).
class deadline_stream final : public httplib::Stream {
 public:
  deadline_stream(int fd, steady::time_point read_by, steady::duration write_timeout)
      : fd_(fd), read_by_(read_by), write_timeout_(write_timeout) {}

  bool is_readable() const override {
    return off_ < len_ || (ssl_ && SSL_pending(ssl_) > 0) || wait(POLLIN, read_by_);
  }
  bool is_writable() const override { return wait(POLLOUT, steady::now() + write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    // Buffered: httplib reads its request line and headers a byte at a time.
    if (off_ == len_) {
      const ssize_t n = ssl_ ? tls_io(false, buf_, sizeof buf_, read_by_) : plain_recv();
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<std::size_t>(n);
    }
    const std::size_t k = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_ + off_, k);
    off_ += k;
    return static_cast<ssize_t>(k);
  }
  ssize_t write(const char* ptr, size_t size) override {
    // Per write: a long wait or an event stream writes late, but each of
    // its writes must get through in time.
    const auto by = steady::now() + write_timeout_;
    if (ssl_) return tls_io(true, const_cast<char*>(ptr), size, by);
    if (!wait(POLLOUT, by)) return -1;
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }
  // Serve TLS on the (non-blocking) socket: the handshake must end by read_by.
  bool start_tls(SSL* ssl) {
    ssl_ = ssl;
    for (;;) {
      const int r = SSL_accept(ssl_);
      if (r == 1) return true;
      if (!wait_for_tls(SSL_get_error(ssl_, r), read_by_)) return false;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  ssize_t plain_recv() {
    if (!wait(POLLIN, read_by_)) return -1;
    ssize_t n;
    do n = ::recv(fd_, buf_, sizeof buf_, 0);
    while (n < 0 && errno == EINTR);
    return n;
  }
  // One SSL_read or SSL_write, waiting (until `by`) for what the record
  // layer needs: a TLS read may need to write and a write to read.
  ssize_t tls_io(bool writing, char* p, std::size_t n, steady::time_point by) {
    for (;;) {
      const int len = static_cast<int>(std::min<std::size_t>(n, 1 << 30));
      const int r = writing ? SSL_write(ssl_, p, len) : SSL_read(ssl_, p, len);
      if (r > 0) return r;
      const int e = SSL_get_error(ssl_, r);
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
      pollfd p{fd_, events, 0};
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
    if (get(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
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

  int fd_;
  steady::time_point read_by_;
  steady::duration write_timeout_;
  SSL* ssl_ = nullptr;
  char buf_[4096];
  std::size_t off_ = 0, len_ = 0;
};

}  // namespace

// httplib's server with the deadlines above: one request per connection,
// read through a deadline_stream.
class metrics_http::server final : public httplib::Server {
 public:
  explicit server(metrics_http_options opts) : opts_(opts) {
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
  bool process_and_close_socket(socket_t sock) override {
    bool ok = false;
    if (!drop_current_connection) {
      const auto read_by = steady::now() + opts_.request_timeout;
      deadline_stream strm(sock, read_by, opts_.response_timeout);
      SSL* ssl = nullptr;
      if (tls_) {
        ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
        ssl = SSL_new(tls_);
        if (ssl && SSL_set_fd(ssl, sock) != 1) {
          SSL_free(ssl);
          ssl = nullptr;
        }
      }
      if (!tls_ || (ssl && strm.start_tls(ssl))) {
        bool closed = false;
        ok = process_request(strm, /*close_connection=*/true, closed, [](httplib::Request&) {});
        if (ssl) SSL_shutdown(ssl);  // one try: the close below ends the connection either way
      }
      if (ssl) SSL_free(ssl);
      ERR_clear_error();
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  const metrics_http_options opts_;
  SSL_CTX* tls_ = nullptr;
};

metrics_http::metrics_http(protocol::service& svc, unsigned workers, const std::string& spec, metrics_http_options opts)
    : http_(std::make_unique<server>(opts)), api_(opts.api) {
  const auto hp = parse_host_port(spec);
  if (!is_loopback(hp.host) && opts.tls_cert.empty())
    throw std::runtime_error(spec + " refused: without TLS this endpoint listens on loopback only");
  if (api_) api_->install(*http_);
  if (!opts.tls_cert.empty()) scheme_ = "https";
  http_->new_task_queue = [opts] { return new growing_pool(opts.max_threads); };
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
