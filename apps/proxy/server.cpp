#include "server.hpp"

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <cstdio>
#include <mutex>
#include <span>
#include <stdexcept>
#include <vector>

#include "cache.hpp"
#include "http_stream.hpp"
#include "priorities.hpp"
#include "recent_samples.hpp"

namespace proxy {
namespace io = promptly::io;
namespace pt = promptly::typed;
using clock_type = std::chrono::steady_clock;

namespace {
constexpr auto io_timeout = std::chrono::seconds(5);  // origin fetches and writes to clients
}

struct server::state {
  state(promptly::runtime& rt_, server_options o) : rt(rt_), opt(std::move(o)), listener(io::listener::tcp(opt.host, opt.port)) {}
  promptly::runtime& rt;
  const server_options opt;
  io::listener listener;
  std::stop_source stop;
  proxy::cache cache;

  mutable std::mutex mutex;  // counters, stats times, live connection tasks
  std::condition_variable idle;
  server_counters counters;
  apps::recent_samples stats_us;  // the last 65,536 statistics runs' times
  std::uint64_t live = 0;  // connection tasks (loops and fetches) running or queued
  io::connection_limit connections{opt.max_connections};  // client connections open

  template <class F>
  void update(F&& f) {
    std::lock_guard lock(mutex);
    f(counters);
  }
  void task_started() { update([&](server_counters&) { ++live; }); }
  void task_ended() {
    std::lock_guard lock(mutex);
    if (--live == 0) idle.notify_all();
  }
};

// A client connection, handed between its loop and its fetches: exactly one task owns it at a
// time (the loop, or the fetch it handed the connection to), so its members need no lock. It
// holds one of the server's connection slots until it is destroyed, and gives the slot back
// before its descriptor closes: a client that saw the end of its connection can connect again.
struct connection {
  connection(io::descriptor d_, std::shared_ptr<server::state> owner_)
      : d(std::move(d_)), in(HTTP_REQUEST, owner_->opt.max_message), owner(std::move(owner_)) {}
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  io::descriptor d;
  http_stream in;
  std::string buffered;  // bytes read but not yet parsed (a pipelined next request)
  std::shared_ptr<server::state> owner;
  // Declared last, so destroyed first: the slot is back before `d` closes.
  const io::connection_limit::slot held{&owner->connections};
};

namespace {
using state = server::state;
using conn_ptr = std::shared_ptr<connection>;

// The optional headers of a response.
struct extra_headers {
  const char* x_cache = nullptr;  // HIT or MISS
  std::int64_t reacted_at_ns = 0;  // X-Reacted-At-Ns (monotonic_ns() when the client loop took the request), if not 0
  bool closing = false;  // the proxy closes the connection after this response, and says so (RFC 9112, 9.6)
};

bool respond(connection& c, int status, const char* reason, std::string_view body, const extra_headers& h = {}) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n" + (h.x_cache ? std::string("X-Cache: ") + h.x_cache + "\r\n" : "") +
                     (h.reacted_at_ns ? "X-Reacted-At-Ns: " + std::to_string(h.reacted_at_ns) + "\r\n" : "") +
                     (h.closing ? "Connection: close\r\n" : "") + "Content-Type: text/html\r\n\r\n";
  try {
    io::write(c.d, head + std::string(body), io_timeout).get();
    return true;
  } catch (const io::error&) {
    return false;
  }
}

enum class read_result { request, ended, timed_out };

// Reads until the connection's stream holds a complete message: request. ended at end of file
// between messages, on cancellation, or when the peer vanished; timed_out when no complete
// request arrived within idle_timeout of the call. Throws http_error if malformed.
read_result read_request(connection& c, const state& s, std::stop_token stop) {
  const io::deadline until = s.opt.idle_timeout.count() > 0 ? io::deadline(s.opt.idle_timeout) : io::deadline{};
  char buf[16384];
  for (;;) {
    if (!c.buffered.empty()) {
      std::size_t used = c.in.feed(c.buffered.data(), c.buffered.size());
      c.buffered.erase(0, used);
      if (c.in.complete()) return read_result::request;
    }
    std::size_t n = 0;
    try {
      n = io::read(c.d, std::span<char>(buf, sizeof buf), until, stop).get();
    } catch (const io::end_of_file&) {
      c.in.finish();
      return c.in.complete() ? read_result::request : read_result::ended;
    } catch (const io::timed_out&) {
      return read_result::timed_out;
    } catch (const io::error&) {
      return read_result::ended;
    }
    c.buffered.append(buf, n);
  }
}

// The absolute URL's origin, if it is a loopback one: {host, port, path}.
struct target {
  std::string host;
  std::uint16_t port;
  std::string path;
};
std::optional<target> loopback_target(const std::string& url) {
  http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(url.data(), url.size(), 0, &u) != 0 || !(u.field_set & (1 << UF_HOST))) return std::nullopt;
  target t;
  t.host = url.substr(u.field_data[UF_HOST].off, u.field_data[UF_HOST].len);
  t.port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
  t.path = (u.field_set & (1 << UF_PATH)) ? url.substr(u.field_data[UF_PATH].off) : "/";
  if (t.host != "127.0.0.1" && t.host != "localhost") return std::nullopt;
  return t;
}

void client_loop_task(ctx<client_loop> c, std::shared_ptr<state> s, conn_ptr conn);

std::string refusal_503(std::size_t max_connections) {
  const std::string body = "the proxy has " + std::to_string(max_connections) + " connections open (its limit); retry later\n";
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nContent-Type: text/plain\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body;
}

std::string stats_json(const state& s) {
  server_counters k;
  std::vector<double> us;
  {
    std::lock_guard lock(s.mutex);
    k = s.counters;
    us = s.stats_us.values();
  }
  std::sort(us.begin(), us.end());
  auto rank = [&](double q) { return us.empty() ? 0.0 : us[std::min(us.size() - 1, static_cast<std::size_t>(q * us.size()))]; };
  double mean = 0;
  for (double x : us) mean += x / static_cast<double>(us.size());
  auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "{\"requests\": %llu, \"hits\": %llu, \"misses\": %llu, \"errors\": %llu, \"evictions\": %llu, "
                "\"stats_runs\": %llu, \"cached_pages\": %llu, \"cached_bytes\": %llu, \"refused_connections\": %llu, "
                "\"timed_out_connections\": %llu, "
                "\"stats_us_mean\": %.1f, \"stats_us_p50\": %.1f, \"stats_us_p99\": %.1f}",
                u(k.requests), u(k.hits), u(k.misses), u(k.errors), u(k.evictions), u(k.stats_runs), u(k.cached_pages),
                u(k.cached_bytes), u(k.refused_connections), u(k.timed_out_connections), mean, rank(0.5), rank(0.99));
  return buf;
}

// A miss: fetch the page from the origin, cache it, answer, and give the connection back to a
// new client loop.
// reacted_at_ns: when the client loop took the request (the X-Reacted-At-Ns header).
void fetch_task(ctx<fetch> c, std::shared_ptr<state> s, conn_ptr conn, std::string url, target t, std::int64_t reacted_at_ns) {
  std::string body;
  int status = 502;
  try {
    io::descriptor o = io::connect_tcp(t.host, t.port, io_timeout).get();
    io::write(o, "GET " + t.path + " HTTP/1.1\r\nHost: " + t.host + ":" + std::to_string(t.port) + "\r\nConnection: close\r\n\r\n",
              io_timeout).get();
    http_stream in(HTTP_RESPONSE, s->opt.max_message);
    char buf[16384];
    const auto until = clock_type::now() + io_timeout;
    while (!in.complete()) {
      std::size_t n = 0;
      try {
        n = io::read(o, std::span<char>(buf, sizeof buf), until, s->stop.get_token()).get();
      } catch (const io::end_of_file&) {
        in.finish();
        break;
      }
      for (std::size_t at = 0; at < n && !in.complete();) at += in.feed(buf + at, n - at);
    }
    if (!in.complete()) throw http_error("origin response incomplete");
    auto m = in.take();
    status = m.status;
    body = std::move(m.body);
  } catch (const std::exception& e) {
    body = std::string("origin fetch failed: ") + e.what();
  }
  bool ok;
  if (status == 200) {
    auto p = std::make_shared<const std::string>(std::move(body));
    s->cache.insert(url, p);
    ok = respond(*conn, 200, "OK", *p, {.x_cache = "MISS", .reacted_at_ns = reacted_at_ns});
  } else {
    s->update([](server_counters& k) { ++k.errors; });
    ok = respond(*conn, status == 404 ? 404 : 502, status == 404 ? "Not Found" : "Bad Gateway", body, {.reacted_at_ns = reacted_at_ns});
  }
  if (ok && !s->stop.stop_requested()) {
    s->task_started();
    (void)pt::fcreate<client_loop>(c, client_loop_task, s, conn);  // more urgent: creating is allowed
  }
  s->task_ended();
}

void client_loop_task(ctx<client_loop> c, std::shared_ptr<state> s, conn_ptr conn) {
  const auto stop = s->stop.get_token();
  for (;;) {
    http_message m;
    try {
      const read_result got = read_request(*conn, *s, stop);
      if (got == read_result::timed_out) {
        s->update([](server_counters& k) { ++k.timed_out_connections; });
        // A keep-alive connection that sent nothing is closed silently, as nginx does; a
        // request cut short is told why.
        if (!conn->in.idle()) respond(*conn, 408, "Request Timeout", "no complete request within the proxy's idle timeout\n", {.closing = true});
      }
      if (got != read_result::request) break;
      m = conn->in.take();
    } catch (const http_error& e) {
      s->update([](server_counters& k) { ++k.errors; });
      respond(*conn, 400, "Bad Request", e.what(), {.closing = true});
      break;
    }
    // The reaction: this loop holds the request and decides now how to answer it.
    const std::int64_t reacted_at_ns = monotonic_ns();
    s->update([](server_counters& k) { ++k.requests; });
    if (m.method != "GET") {
      s->update([](server_counters& k) { ++k.errors; });
      if (!respond(*conn, 405, "Method Not Allowed", "only GET is proxied\n")) break;
      continue;
    }
    if (m.url == "/proxy-stats") {
      if (!respond(*conn, 200, "OK", stats_json(*s))) break;
      continue;
    }
    auto t = loopback_target(m.url);
    if (!t) {
      s->update([](server_counters& k) { ++k.errors; });
      if (!respond(*conn, 403, "Forbidden", "this proxy fetches only http://127.0.0.1 or http://localhost URLs\n")) break;
      continue;
    }
    if (page p = s->cache.find(m.url)) {
      s->update([](server_counters& k) { ++k.hits; });
      if (!respond(*conn, 200, "OK", *p, {.x_cache = "HIT", .reacted_at_ns = reacted_at_ns})) break;
      continue;
    }
    s->update([](server_counters& k) { ++k.misses; });
    s->task_started();
    (void)pt::fcreate<fetch>(c, fetch_task, s, conn, std::move(m.url), std::move(*t), reacted_at_ns);  // the connection moves on
    s->task_ended();
    return;
  }
  s->task_ended();
}

void resize_task(ctx<resize>, std::shared_ptr<state> s) {
  io::periodic_timer timer(s->opt.resize_period);
  for (;;) {
    try {
      (void)timer.tick(s->stop.get_token()).get();
    } catch (const io::cancelled&) {
      return;
    }
    if (std::size_t n = s->cache.shrink_to(s->opt.cache_bytes)) s->update([&](server_counters& k) { k.evictions += n; });
  }
}

void stats_task(ctx<stats>, std::shared_ptr<state> s) {
  io::periodic_timer timer(s->opt.stats_period);
  for (;;) {
    try {
      (void)timer.tick(s->stop.get_token()).get();
    } catch (const io::cancelled&) {
      return;
    }
    const auto t0 = clock_type::now();
    auto [pages, bytes] = s->cache.census();
    const double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
    std::lock_guard lock(s->mutex);
    s->counters.cached_pages = pages;
    s->counters.cached_bytes = bytes;
    ++s->counters.stats_runs;
    s->stats_us.add(us);
  }
}

void accept_task(ctx<client_loop> c, std::shared_ptr<state> s) {
  const auto stop = s->stop.get_token();
  for (;;) {
    io::descriptor d;
    try {
      d = s->listener.accept({}, stop).get();
    } catch (const io::cancelled&) {
      return;
    } catch (const io::closed&) {
      return;
    } catch (const io::error& e) {
      std::fprintf(stderr, "proxy: accept: %s (retrying)\n", e.what());
      try {
        io::sleep_for(std::chrono::milliseconds(10), stop).get();
      } catch (const io::cancelled&) {
        return;
      }
      continue;
    }
    if (!s->connections.try_open()) {
      s->update([](server_counters& k) { ++k.refused_connections; });
      // Said before closing, as nginx and Redis do; a fresh socket takes this short write at once.
      try {
        io::write(d, refusal_503(s->opt.max_connections), io_timeout).get();
      } catch (const io::error&) {
      }
      continue;  // `d` closes here
    }
    s->task_started();
    (void)pt::fcreate<client_loop>(c, client_loop_task, s, std::make_shared<connection>(std::move(d), s));
  }
}

}  // namespace

server::server(promptly::runtime& rt, server_options options) {
  if (options.resize_period.count() <= 0 || options.stats_period.count() <= 0)
    throw std::invalid_argument("proxy::server_options: resize_period and stats_period must be positive");
  if (options.max_connections == 0) throw std::invalid_argument("proxy::server_options: max_connections must be at least 1");
  if (options.idle_timeout.count() < 0) throw std::invalid_argument("proxy::server_options: idle_timeout must not be negative (0: no limit)");
  state_ = std::make_shared<state>(rt, std::move(options));
  tasks_.push_back(pt::submit<order, client_loop>(rt, accept_task, state_));
  tasks_.push_back(pt::submit<order, resize>(rt, resize_task, state_));
  tasks_.push_back(pt::submit<order, stats>(rt, stats_task, state_));
}

server::~server() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "proxy: stop: %s\n", e.what());
  }
}

std::uint16_t server::port() const { return state_->listener.port(); }

void server::stop() {
  if (stopped_) return;
  stopped_ = true;
  state_->stop.request_stop();
  for (auto& t : tasks_) t.get();
  // Client loops end on the stop token; a fetch under way answers its client, then ends.
  std::unique_lock lock(state_->mutex);
  state_->idle.wait(lock, [&] { return state_->live == 0; });
}

server_counters server::counters() const {
  std::lock_guard lock(state_->mutex);
  return state_->counters;
}

std::string server::stats_json() const { return proxy::stats_json(*state_); }

}  // namespace proxy
