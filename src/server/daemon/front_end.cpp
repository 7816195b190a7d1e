#include "server/daemon/front_end.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "server/protocol/reply.hpp"

namespace promptly::server::daemon {

namespace {

thread_local bool on_loop_thread = false;

// How job threads tell the loop that a connection has output: the
// connection's id goes on the dirty list; the first id on an empty list
// also writes the eventfd (the loop reads the eventfd before it swaps the
// list, so no id is ever left behind). On the loop thread itself no write is
// needed: the loop drains the list before every epoll_wait.
struct wakeup {
  int efd = -1;
  std::mutex mu;
  std::vector<std::uint64_t> dirty;

  wakeup() : efd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (efd < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  ~wakeup() { ::close(efd); }
  void mark(std::uint64_t id) {
    bool first;
    {
      std::lock_guard lock(mu);
      first = dirty.empty();
      dirty.push_back(id);
    }
    if (first && !on_loop_thread) ring();
  }
  void ring() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(efd, &one, sizeof one);  // EAGAIN: already signalled
  }
  std::vector<std::uint64_t> take() {
    std::vector<std::uint64_t> out;
    std::lock_guard lock(mu);
    out.swap(dirty);
    return out;
  }
};

struct listener {
  int fd;
  std::optional<std::string> token;
};

struct connection {
  int fd = -1;
  std::shared_ptr<protocol::session> s;
  std::string unsent;
  std::size_t off = 0;
  std::uint32_t events = 0;
  // Written all and shut down for writing at the drain; read (and
  // discarded) until the peer's end of stream, so that closing resets nothing.
  bool closing = false;
  // What this connection adds to the service's gauges now.
  std::int64_t counted_bytes = 0;
  bool counted_paused = false;
};

// Tags in epoll's data: listeners and the eventfd below this, connections above.
constexpr std::uint64_t first_connection_id = 1024;
constexpr std::uint64_t wakeup_tag = 1023;

}  // namespace

struct front_end::loop {
  protocol::service& svc;
  front_end_options opts;
  int ep = -1;
  std::shared_ptr<wakeup> wake = std::make_shared<wakeup>();
  std::vector<listener> listeners;
  std::unordered_map<std::uint64_t, connection> conns;
  std::set<std::uint64_t> streaming;
  std::set<std::uint64_t> lingering;  // closing connections
  // Connections to token listeners, with the time they must have shown the
  // token by; in accept order, so deadlines only grow (the invariants above).
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> auth_due;
  std::uint64_t next_id = first_connection_id;
  std::chrono::steady_clock::time_point accept_paused_until{};

  std::mutex finish_mu;
  bool finishing = false;  // guarded by finish_mu
  std::chrono::steady_clock::time_point finish_deadline{};
  bool finish_seen = false;  // loop thread's copy
  std::size_t unsent_at_close = 0;

  loop(protocol::service& s, front_end_options o) : svc(s), opts(o), ep(::epoll_create1(EPOLL_CLOEXEC)) {
    if (ep < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = wakeup_tag;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, wake->efd, &ev);
  }
  ~loop() {
    for (auto& [id, c] : conns) ::close(c.fd);
    for (auto& l : listeners)
      if (l.fd >= 0) ::close(l.fd);
    ::close(ep);
  }

  void set_events(std::uint64_t id, connection& c, std::uint32_t events) {
    if (events == c.events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
    c.events = events;
  }

  void close_connection(std::uint64_t id) {
    const auto it = conns.find(id);
    if (it == conns.end()) return;
    ::epoll_ctl(ep, EPOLL_CTL_DEL, it->second.fd, nullptr);
    ::close(it->second.fd);
    uncount(it->second);
    conns.erase(it);
    streaming.erase(id);
    lingering.erase(id);
    svc.connections.fetch_sub(1, std::memory_order_relaxed);  // statistics only
  }

  std::size_t unsent_bytes(const connection& c) const { return c.unsent.size() - c.off; }

  // The connection's share of the service's gauges (statistics only:
  // relaxed), updated after every change of its output or input state.
  void count(connection& c) {
    const auto bytes = static_cast<std::int64_t>(unsent_bytes(c) + c.s->buffered_bytes());
    const bool paused = !finish_seen && !c.closing && !c.s->input_ended() && !c.s->wants_input(unsent_bytes(c));
    svc.buffered_bytes.fetch_add(bytes - c.counted_bytes, std::memory_order_relaxed);
    c.counted_bytes = bytes;
    if (paused != c.counted_paused)
      svc.connections_reading_paused.fetch_add(paused ? 1 : -1, std::memory_order_relaxed);
    c.counted_paused = paused;
  }
  // Every connection closed: nothing of them is left in the gauges.
  void gauges_settled() const {
    assert(svc.buffered_bytes.load(std::memory_order_relaxed) == 0 && "buffered_bytes sums open connections");
    assert(svc.connections_reading_paused.load(std::memory_order_relaxed) == 0 && "paused counts open connections");
  }
  void uncount(connection& c) {
    svc.buffered_bytes.fetch_sub(c.counted_bytes, std::memory_order_relaxed);
    if (c.counted_paused) svc.connections_reading_paused.fetch_sub(1, std::memory_order_relaxed);
    c.counted_bytes = 0;
    c.counted_paused = false;
  }

  // Drain, last step for a connection whose replies are all written: end of
  // stream to the peer (shutdown SHUT_WR), then close once nothing is left
  // to read. A close with unread input would reset the connection, and a
  // reset makes the peer's kernel drop replies it has not delivered yet.
  void close_gracefully(std::uint64_t id, connection& c) {
    c.closing = true;
    ::shutdown(c.fd, SHUT_WR);
    uncount(c);
    set_events(id, c, EPOLLIN | EPOLLRDHUP);
    streaming.erase(id);
    lingering.insert(id);
    linger(id);
  }

  // Reads and discards what a closing connection's peer sent; closes it at
  // the peer's end of stream, or as soon as its receive queue is empty and
  // the peer has taken every byte written (SIOCOUTQ 0: consumed on a Unix
  // socket, acknowledged on TCP), so idle peers never hold up the exit.
  // Bounded by the flush deadline.
  void linger(std::uint64_t id) {
    const auto it = conns.find(id);
    if (it == conns.end()) return;
    char buf[64 * 1024];
    for (int round = 0; round < 16; ++round) {
      const ssize_t n = ::recv(it->second.fd, buf, sizeof buf, 0);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        int outq = 0;
        if (::ioctl(it->second.fd, SIOCOUTQ, &outq) != 0 || outq == 0) close_connection(id);
        return;
      }
      close_connection(id);  // end of stream, or the peer is gone
      return;
    }
  }

  // Drain, final step: reads what the kernel holds for the connection
  // (until it would block, its end of stream, or max_output_bytes, a bound
  // against a peer that never stops sending) and answers it whatever the
  // connection's bounds: every job is terminal by now, so every reply is
  // ready at once and the input is what the socket buffers held.
  void read_remaining_input(std::uint64_t id) {
    const auto it = conns.find(id);
    if (it == conns.end() || it->second.closing || it->second.s->input_ended()) return;
    connection& c = it->second;
    char buf[64 * 1024];
    for (std::size_t total = 0; total < opts.max_output_bytes;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.s->feed(std::string_view(buf, static_cast<std::size_t>(n)));
        total += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;  // would block, end of stream or an error: end_input follows
    }
  }

  // Moves the session's output to the socket; updates interest and the
  // streaming set; closes the connection once it is finished. Returns false
  // if the connection was closed.
  bool flush(std::uint64_t id) {
    const auto it = conns.find(id);
    if (it == conns.end()) return false;
    connection& c = it->second;
    if (c.closing) return true;
    if (std::string more = c.s->take_output(); !more.empty()) {
      if (c.off == c.unsent.size()) {
        c.unsent = std::move(more);
        c.off = 0;
      } else {
        c.unsent.append(more);
      }
    }
    while (c.off < c.unsent.size()) {
      const ssize_t n = ::send(c.fd, c.unsent.data() + c.off, c.unsent.size() - c.off, MSG_NOSIGNAL);
      if (n > 0) {
        c.off += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close_connection(id);  // the peer is gone (EPIPE, ECONNRESET)
      return false;
    }
    if (c.off == c.unsent.size()) {
      c.unsent.clear();
      c.off = 0;
      if (c.unsent.capacity() > (std::size_t{1} << 20)) c.unsent.shrink_to_fit();
    }
    if (finish_seen && c.s->pending_replies() == 0 && c.unsent.empty()) {
      close_gracefully(id, c);
      return conns.count(id) != 0;
    }
    if (c.s->finished() && c.unsent.empty()) {
      close_connection(id);  // the peer ended its input: nothing unread can reset it
      return false;
    }
    std::uint32_t events = 0;
    if (!finish_seen && c.s->wants_input(unsent_bytes(c))) events |= EPOLLIN;
    if (!c.unsent.empty()) events |= EPOLLOUT;
    set_events(id, c, events);
    if (c.s->next_stream_at()) streaming.insert(id);
    else streaming.erase(id);
    count(c);
    return true;
  }

  void on_readable(std::uint64_t id) {
    const auto it = conns.find(id);
    if (it == conns.end()) return;
    connection& c = it->second;
    if (c.closing) {
      linger(id);
      return;
    }
    if (finish_seen) return;  // the drain read the rest already
    char buf[64 * 1024];
    // A bounded number of reads per event keeps one fast client from
    // starving the others (level-triggered epoll reports the rest).
    // Checked before every read: a connection passes its bounds by at most
    // the replies to one read.
    for (int round = 0; round < 16; ++round) {
      if (!c.s->wants_input(unsent_bytes(c))) break;
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.s->feed(std::string_view(buf, static_cast<std::size_t>(n)));
        // Write as we go, so a long pipeline's replies stream out.
        if (!flush(id)) return;
        continue;
      }
      if (n == 0) {
        c.s->end_input();  // half-close: replies still pending are delivered
        break;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      close_connection(id);
      return;
    }
    flush(id);
  }

  void accept_from(const listener& l) {
    for (;;) {
      const int fd = ::accept4(l.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: the pending connection would make a
          // level-triggered listener spin; try again in 100 ms.
          accept_paused_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
          for (const auto& x : listeners) ::epoll_ctl(ep, EPOLL_CTL_DEL, x.fd, nullptr);
        }
        return;
      }
      if (conns.size() >= opts.max_connections) {
        svc.connections_refused.fetch_add(1, std::memory_order_relaxed);  // statistics only
        const std::string line = protocol::error_line(
            "rejected", "too many connections (at most " + std::to_string(opts.max_connections) + ")", nullptr) + "\n";
        [[maybe_unused]] const auto n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
        ::close(fd);
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on Unix sockets
      const std::uint64_t id = next_id++;
      protocol::session_options so;
      so.token = l.token;
      so.max_pending_replies = opts.max_pending_replies;
      so.max_buffered_bytes = opts.max_output_bytes;
      auto s = protocol::session::create(svc, std::move(so), [w = wake, id] { w->mark(id); });
      connection& c = conns[id];
      c.fd = fd;
      c.s = std::move(s);
      c.events = EPOLLIN;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = id;
      ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
      if (l.token) {
        const auto due = std::chrono::steady_clock::now() + opts.auth_timeout;
        assert((auth_due.empty() || auth_due.back().first <= due) && "auth_due stays in deadline order");
        auth_due.emplace_back(due, id);
      }
      svc.connections.fetch_add(1, std::memory_order_relaxed);        // statistics only
      svc.connections_total.fetch_add(1, std::memory_order_relaxed);  // statistics only
    }
  }

  void watch_listeners() {
    for (std::size_t i = 0; i < listeners.size(); ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      ::epoll_ctl(ep, EPOLL_CTL_ADD, listeners[i].fd, &ev);
    }
  }

  // The drain's final step: every request the kernel holds, in the listen
  // backlog or in a connection's receive buffer, is read and answered
  // before the connections close (gracefully: close_gracefully).
  void begin_finish() {
    for (auto& l : listeners) {
      if (l.fd < 0) continue;
      accept_from(l);
      ::epoll_ctl(ep, EPOLL_CTL_DEL, l.fd, nullptr);
      ::close(l.fd);
      l.fd = -1;
    }
    finish_seen = true;
    streaming.clear();
    std::vector<std::uint64_t> ids;
    ids.reserve(conns.size());
    for (auto& [id, c] : conns) ids.push_back(id);
    for (const auto id : ids) {
      read_remaining_input(id);
      // No more requests: a partial line gets its truncated-request reply.
      if (auto it = conns.find(id); it != conns.end() && !it->second.closing) it->second.s->end_input();
      flush(id);
    }
  }

  // Closes, with a not_allowed line, every connection past its
  // authentication deadline that has not shown the token.
  void close_unauthenticated(std::chrono::steady_clock::time_point now) {
    while (!auth_due.empty() && auth_due.front().first <= now) {
      const std::uint64_t id = auth_due.front().second;
      auth_due.pop_front();
      const auto it = conns.find(id);
      if (it == conns.end() || !it->second.s->awaiting_token()) continue;
      svc.connections_timed_out.fetch_add(1, std::memory_order_relaxed);  // statistics only
      const std::string line = protocol::error_line("not_allowed", "no request with the listener's token within " +
                                                                       std::to_string(opts.auth_timeout.count()) +
                                                                       " ms of connecting; closing", nullptr) + "\n";
      // Best effort, as the rejection of a connection past the limit: the
      // connection is closed whether or not the line fits the socket.
      [[maybe_unused]] const auto n = ::send(it->second.fd, line.data(), line.size(), MSG_NOSIGNAL);
      close_connection(id);
    }
  }

  int timeout_ms(std::chrono::steady_clock::time_point now) const {
    std::optional<std::chrono::steady_clock::time_point> next;
    for (const auto id : streaming)
      if (auto it = conns.find(id); it != conns.end())
        if (auto t = it->second.s->next_stream_at(); t && (!next || *t < *next)) next = t;
    if (accept_paused_until != std::chrono::steady_clock::time_point{} && (!next || accept_paused_until < *next))
      next = accept_paused_until;
    if (finish_seen && (!next || finish_deadline < *next)) next = finish_deadline;
    // A lingering peer may take our last bytes without sending anything:
    // SIOCOUTQ reaching 0 wakes no epoll, so look again every 10 ms.
    if (const auto soon = now + std::chrono::milliseconds(10); !lingering.empty() && (!next || soon < *next))
      next = soon;
    if (!auth_due.empty() && (!next || auth_due.front().first < *next)) next = auth_due.front().first;
    if (!next) return -1;
    if (*next <= now) return 0;
    return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*next - now).count());
  }

  // One epoll event: the wake-up eventfd, a listener, or a connection.
  void on_event(const epoll_event& ev) {
    const std::uint64_t tag = ev.data.u64;
    if (tag == wakeup_tag) {
      std::uint64_t v;
      [[maybe_unused]] const auto r = ::read(wake->efd, &v, sizeof v);
      for (const auto id : wake->take()) flush(id);
    } else if (tag < first_connection_id) {
      if (!finish_seen && tag < listeners.size()) accept_from(listeners[tag]);
    } else {
      on_connection_event(tag, ev.events);
    }
  }

  void on_connection_event(std::uint64_t id, std::uint32_t e) {
    if (const auto it = conns.find(id); it != conns.end() && it->second.closing) {
      linger(id);
      return;
    }
    if (e & EPOLLERR) {
      close_connection(id);
      return;
    }
    if (e & EPOLLHUP) {
      // The peer closed both directions: requests it sent before
      // closing still run (fire-and-forget submits), but no reply
      // can reach it.
      on_readable(id);
      close_connection(id);
      return;
    }
    if (e & EPOLLIN) on_readable(id);
    if (e & EPOLLOUT) flush(id);
  }

  // What is due after each wait, whatever woke it: the authentication
  // deadlines, the end of an accept pause, stats stream lines, the start of
  // finishing, lingering closes.
  void on_timers(std::chrono::steady_clock::time_point now) {
    close_unauthenticated(now);
    if (accept_paused_until != std::chrono::steady_clock::time_point{} && now >= accept_paused_until) {
      accept_paused_until = {};
      if (!finish_seen) watch_listeners();
    }
    for (auto it = streaming.begin(); it != streaming.end();) {
      const std::uint64_t id = *it++;  // flush may erase id
      const auto c = conns.find(id);
      if (c == conns.end()) continue;
      // A subscriber that does not read loses stats lines instead of
      // growing the server's memory.
      if (unsent_bytes(c->second) < opts.max_output_bytes && c->second.s->stream_tick(now)) flush(id);
    }
    {
      std::lock_guard lock(finish_mu);
      if (finishing && !finish_seen) begin_finish();
    }
    if (!lingering.empty()) {
      const std::vector<std::uint64_t> ids(lingering.begin(), lingering.end());
      for (const auto id : ids) linger(id);
    }
  }

  // While finishing: true once every connection is gone, either flushed or
  // closed (counted in unsent_at_close) at the flush deadline.
  bool finish_done(std::chrono::steady_clock::time_point now) {
    if (conns.empty()) return true;
    if (now < finish_deadline) return false;
    for (auto& [id, c] : conns)
      if (!c.unsent.empty() || c.s->pending_replies() > 0) ++unsent_at_close;
    std::vector<std::uint64_t> ids;
    for (auto& [id, c] : conns) ids.push_back(id);
    for (const auto id : ids) close_connection(id);
    return true;
  }

  void run() {
    on_loop_thread = true;
    watch_listeners();
    epoll_event events[256];
    for (;;) {
      // Completions marked from this thread (synchronous replies).
      for (const auto id : wake->take()) flush(id);
      const int n = ::epoll_wait(ep, events, 256, timeout_ms(std::chrono::steady_clock::now()));
      if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
      for (int i = 0; i < n; ++i) on_event(events[i]);
      const auto now = std::chrono::steady_clock::now();
      on_timers(now);
      if (finish_seen && finish_done(now)) return gauges_settled();
    }
  }
};

front_end::front_end(protocol::service& svc, front_end_options opts) : loop_(std::make_unique<loop>(svc, opts)) {}

front_end::~front_end() {
  if (thread_.joinable()) finish(std::chrono::milliseconds(0));
}

void front_end::add_listener(int fd, std::optional<std::string> token) {
  if (thread_.joinable()) throw std::logic_error("front_end::add_listener after start()");
  if (loop_->listeners.size() >= wakeup_tag) throw std::length_error("too many listeners");
  loop_->listeners.push_back({fd, std::move(token)});
}

void front_end::start() {
  thread_ = std::thread([this] { loop_->run(); });
}

std::size_t front_end::finish(std::chrono::milliseconds flush_timeout) {
  if (!thread_.joinable()) return 0;
  {
    std::lock_guard lock(loop_->finish_mu);
    loop_->finishing = true;
    loop_->finish_deadline = std::chrono::steady_clock::now() + flush_timeout;
  }
  loop_->wake->ring();
  thread_.join();
  return loop_->unsent_at_close;
}

}  // namespace promptly::server::daemon
