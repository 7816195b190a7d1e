// A listening socket that spawns a task per connection: the structure of a
// network echo server, where one loop listens for connections and spawns a
// task to handle each client.
//
//   auto l = io::listener::tcp("127.0.0.1", 0);      // port 0: any free port
//   std::stop_source stop;
//   auto done = l.serve(rt, [](io::descriptor c, std::stop_token st) {
//     io::line_reader lines(c);
//     for (;;) io::write(c, lines.read_line({}, st).get() + "\n", {}, st).get();
//   }, {.stop = stop.get_token()});
//   ...
//   stop.request_stop();   // or l.close()
//   done.get();
//
// The accept loop is itself a task of the runtime: it parks on accept(), so
// it holds no worker while no client arrives. Each connection runs as a new
// task of the runtime at serve_options::level (0 by default, the most
// urgent); a handler may take (descriptor) or (descriptor,
// std::stop_token).
//
// A handler that returns a co::task<void> (promptly/co/task.hpp) is a
// coroutine handler: each connection runs as that coroutine, which holds no
// fiber stack while it waits, so a server's idle connections cost their
// frames and buffers only (docs/coroutines.md):
//
//   l.serve(rt, [](io::descriptor c, std::stop_token st) -> co::task<> {
//     io::line_reader lines(c);
//     for (;;) co_await io::write(c, co_await lines.co_read_line({}, st) + "\n", {}, st);
//   });
//
// Everything below holds for both kinds of handler.
//
// Stopping the listener (serve_options::stop, close(), or destroying it)
// ends the loop, and then every connection the loop started: the handler's
// token (one per connection) is stopped (operations given it fail with
// io::cancelled) and the connection's descriptor is closed (pending and
// later operations on it fail with io::closed). So a handler waiting on its
// connection is released whether or not it takes the token. A handler ending with
// io::end_of_file, connection_reset, timed_out, cancelled or closed is a
// normal end of a connection; other exceptions go to
// serve_options::on_error.
//
// serve_options::max_connections bounds the handlers running at once
// (connection_limit.hpp says why a server facing untrusted clients needs
// that); connections past it go to serve_options::on_refused, then close.
//
// The runtime waits for the loop and every connection task at shutdown, so
// stop the listener before destroying the runtime; a handler that waits on
// something other than its connection must end that wait itself.
#pragma once

#include <sys/socket.h>

#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>

#include "promptly/co/task.hpp"
#include "promptly/future.hpp"
#include "promptly/io/deadline.hpp"
#include "promptly/io/descriptor.hpp"

namespace promptly {
class runtime;
}

namespace promptly::io {

namespace detail {
template <class H, bool WithToken = std::invocable<H&, descriptor, std::stop_token>>
struct handler_result_of {
  using type = std::invoke_result_t<H&, descriptor, std::stop_token>;
};
template <class H>
struct handler_result_of<H, false> {
  using type = std::invoke_result_t<H&, descriptor>;
};
template <class H>
using handler_result_t = typename handler_result_of<H>::type;
}  // namespace detail

struct serve_options {
  // Priority level (0 = most urgent) of the accept loop and of every
  // connection task. serve() throws std::out_of_range if the runtime has no
  // such level.
  unsigned level = 0;
  // Ends the accept loop (the future of serve() then completes normally).
  std::stop_token stop{};
  // Receives unexpected exceptions of connection handlers, on the handler's
  // task, outside any catch handler (so it may wait). Default: one line on
  // stderr naming the listener.
  std::function<void(std::exception_ptr)> on_error{};
  // Connections handled at once, at most; 0 (the default, as Go's
  // net/http) sets no limit. Every open connection holds a task and, while
  // it waits, a fiber stack (connection_limit.hpp says why that needs a
  // bound). A connection accepted at the limit is handed to on_refused and
  // then closed; its slot frees when a handler returns.
  std::size_t max_connections = 0;
  // Called on the accept loop's task with a connection refused at
  // max_connections, before it is closed: to tell the client (a short
  // write, e.g. an HTTP 503; it delays the accept loop while it runs).
  // Default: close it silently. Exceptions it throws go to on_error.
  std::function<void(descriptor&)> on_refused{};
};

class listener {
 public:
  // Binds and listens; SO_REUSEADDR is set. Throws io::error naming the
  // failing call ("socket", "bind", "listen").
  [[nodiscard]] static listener tcp(std::string_view host, std::uint16_t port, int backlog = SOMAXCONN);
  // A Unix stream socket at `path` (which must not exist).
  [[nodiscard]] static listener unix_socket(std::string_view path, int backlog = SOMAXCONN);
  // Adopts a socket that is already listening.
  explicit listener(descriptor listening);

  listener(listener&&) noexcept = default;
  listener& operator=(listener&&) noexcept = default;
  ~listener();  // close()

  // The bound TCP port (useful after binding port 0); 0 for Unix sockets.
  [[nodiscard]] std::uint16_t port() const;
  descriptor& socket() noexcept { return *socket_; }

  // The next connection. TCP connections get TCP_NODELAY (interactive
  // traffic should not wait for Nagle's algorithm), as in Go's net package.
  [[nodiscard]] future<descriptor> accept(deadline until = {}, std::stop_token stop = {});

  // Runs the accept loop as a task of `rt` (see above). The future
  // completes when the loop ends: normally after close() or options.stop,
  // exceptionally with the accept error that stopped it (transient errors
  // such as EMFILE or ECONNABORTED are retried after a short pause).
  template <class Handler>
    requires std::invocable<Handler&, descriptor, std::stop_token> || std::invocable<Handler&, descriptor>
  [[nodiscard]] future<void> serve(runtime& rt, Handler handler, serve_options options = {}) {
    constexpr bool returns_task = std::is_same_v<detail::handler_result_t<Handler>, co::task<void>>;
    struct holder final : connection_handler {
      explicit holder(Handler&& fn) : h(std::move(fn)) {}  // not `handler`: that would shadow serve()'s (-Wshadow)
      void operator()(descriptor c, std::stop_token st) override {
        if constexpr (std::invocable<Handler&, descriptor, std::stop_token>)
          (void)std::invoke(h, std::move(c), std::move(st));
        else
          (void)std::invoke(h, std::move(c));
      }
      bool is_coroutine() const noexcept override { return returns_task; }
      co::task<void> coroutine(descriptor c, std::stop_token st) override {
        if constexpr (returns_task) {
          if constexpr (std::invocable<Handler&, descriptor, std::stop_token>)
            return std::invoke(h, std::move(c), std::move(st));
          else
            return std::invoke(h, std::move(c));
        } else {
          return connection_handler::coroutine(std::move(c), std::move(st));
        }
      }
      Handler h;
    };
    return serve_erased(rt, std::make_shared<holder>(std::move(handler)), std::move(options));
  }

  // Completes a pending accept with io::closed: a serve loop ends and
  // closes the connections it started.
  void close() noexcept;

  struct connection_handler {
    virtual ~connection_handler() = default;
    // A plain handler: called on the connection's task.
    virtual void operator()(descriptor c, std::stop_token st) = 0;
    // A coroutine handler: makes the connection's coroutine.
    virtual bool is_coroutine() const noexcept { return false; }
    virtual co::task<void> coroutine(descriptor, std::stop_token) { throw std::logic_error("not a coroutine handler"); }
  };

 private:
  future<void> serve_erased(runtime& rt, std::shared_ptr<connection_handler> h, serve_options options);
  // Shared with the serve loop, so destroying the listener (which closes
  // the socket) never pulls the object from under the loop.
  std::shared_ptr<descriptor> socket_;
  bool tcp_ = false;  // set TCP_NODELAY on accepted connections
};

}  // namespace promptly::io
