// The caching web proxy: HTTP/1.1 over TCP on loopback (priorities.hpp says who runs where).
// Clients send GET requests with absolute URLs (http://127.0.0.1:PORT/path), as to any HTTP
// proxy, over keep-alive connections; the proxy answers from its cache (X-Cache: HIT) or fetches
// the page from the origin first (X-Cache: MISS). Only loopback origins are allowed (403
// otherwise). GET /proxy-stats returns the counters as JSON. Every answer to a proxied GET
// carries X-Reacted-At-Ns: the monotonic clock (http_stream.hpp's monotonic_ns) when the client
// loop took the request, from which the driver measures the papers' "resp".
//
// Shutdown: stop() ends the accept loop, every client loop, the resize and stats tasks, and
// waits for every fetch under way (each answers its client first).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <promptly/io.hpp>
#include <promptly/promptly.hpp>

namespace proxy {

struct server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::size_t cache_bytes = 16 << 20;             // the resize task keeps the cache below this
  std::chrono::milliseconds resize_period{50};
  std::chrono::milliseconds stats_period{250};
  std::size_t max_message = 1 << 20;              // longest request or origin response
  // Client connections open at once, at most; one more is answered 503 and closed (every open
  // connection holds a task and its stack while it waits for the client).
  std::size_t max_connections = 1024;
  // The time a client has to send a complete request, from its connect or the end of the
  // previous response; 0: no limit. Past it the connection is closed, with 408 Request Timeout
  // if part of a request arrived (the deadline is not extended by trickled bytes). Without it,
  // max_connections clients that connect and send nothing would hold every slot for good
  // (nginx's client_header_timeout and keepalive_timeout, Go's ReadTimeout and IdleTimeout).
  std::chrono::milliseconds idle_timeout{60'000};
};

struct server_counters {
  std::uint64_t requests = 0, hits = 0, misses = 0, errors = 0, evictions = 0, stats_runs = 0;
  std::uint64_t cached_pages = 0, cached_bytes = 0;  // at the last statistics run
  std::uint64_t refused_connections = 0;             // over server_options::max_connections
  std::uint64_t timed_out_connections = 0;           // closed at server_options::idle_timeout
};

class server {
 public:
  // Binds and starts; `rt` needs order::size levels. Throws io::error if it cannot bind.
  server(promptly::runtime& rt, server_options options = {});
  server(const server&) = delete;
  server& operator=(const server&) = delete;
  ~server();  // stop()

  std::uint16_t port() const;
  void stop();  // idempotent; from a thread that is no worker of the runtime
  server_counters counters() const;
  std::string stats_json() const;  // counters and the statistics task's run times

  struct state;

 private:
  std::shared_ptr<state> state_;
  std::vector<promptly::future<void>> tasks_;
  bool stopped_ = false;
};

}  // namespace proxy
