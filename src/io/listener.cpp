// listener: binding, accepting, and the accept loop that spawns a task per
// connection (the structure of a network echo server).
//
// Invariants
//  * With serve_options::max_connections, at most that many handlers run at
//    once: the loop takes a slot before it submits a connection task, and
//    the task gives it back after its handler returned (connection_limit::slot).
//  * Every connection the loop started is closed when the loop ends, however
//    it ends (stop token, close(), destruction, a fatal accept error): each
//    connection task holds a connection_stop bound to the loop's stop source.
//    So a handler parked in an operation on its connection is released even
//    if it ignores the stop token, and the runtime's shutdown, which waits
//    for every task, returns.
//  * No task parks inside a catch handler here. The C++ runtime keeps the
//    exceptions being handled in a per-thread stack; a fiber that parked in
//    a handler and resumed on another worker would end its handler on that
//    thread's stack, and tasks run meanwhile on the first thread would see
//    its exception as theirs. Handlers below only record what happened; the
//    waits (the retry pause, on_error, waking connections) come after.
//  * A coroutine handler's connection (run_coroutine_connection) keeps the
//    same slot, connection_stop and report as a plain handler's task, for the
//    coroutine's whole life (its frame holds them).
#include "promptly/io/listener.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>

#include "address.hpp"
#include "fd_operations.hpp"
#include "fd_state.hpp"
#include "promptly/io/connection_limit.hpp"
#include "promptly/io/error.hpp"
#include "promptly/io/operations.hpp"
#include "promptly/io/timers.hpp"
#include "promptly/this_task.hpp"
#include "promptly/runtime.hpp"

namespace promptly::io {
namespace {

// How long the accept loop pauses after a transient failure (out of
// descriptors or memory) before it tries again.
constexpr std::chrono::milliseconds accept_retry_pause{10};

listener bind_and_listen(const detail::socket_address& a, int backlog) {
  int fd = ::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw io::error(errno, "socket", -1);
  descriptor d = detail::descriptor_access::adopt_nonblocking(fd, true);
  if (a.family != AF_UNIX) {
    int one = 1;
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) throw io::error(errno, "setsockopt", fd);
  }
  if (::bind(fd, a.get(), a.length) != 0) throw io::error(errno, "bind", fd);
  if (::listen(fd, backlog) != 0) throw io::error(errno, "listen", fd);
  return listener(std::move(d));
}

bool transient_accept_error(int e) noexcept {
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM || e == EPROTO || e == EPERM || e == EINTR;
}

// The ends of a connection that a handler may simply let propagate.
bool normal_end(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const end_of_file&) {
    return true;
  } catch (const connection_reset&) {
    return true;
  } catch (const timed_out&) {
    return true;
  } catch (const cancelled&) {
    return true;
  } catch (const closed&) {
    return true;
  } catch (...) {
    return false;
  }
}

bool is_tcp(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
         (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
}

// Called outside any catch handler: on_error may wait.
void report(const std::function<void(std::exception_ptr)>& on_error, std::exception_ptr e) {
  if (on_error) {
    on_error(e);
    return;
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    std::fprintf(stderr, "promptly::io::listener: a connection handler failed: %s\n", x.what());
  } catch (...) {
    std::fprintf(stderr, "promptly::io::listener: a connection handler threw a non-std exception\n");
  }
}

// A connection's stop: closes the connection when the listener's loop stops
// (the handler may not pass the token on, or take none, and its pending
// operations on the connection must end anyway: they fail with io::closed),
// and gives the handler a stop token of the connection's own that the
// loop's stop requests too. Its own, because every operation given a token
// registers a std::stop_callback on the token's shared state and copies of
// the token count owners there, each under that state's lock or an atomic
// read-modify-write: with one token shared by every connection, workers
// serving different connections contended on one cache line per operation.
// Holds a reference on the descriptor's state, so the callback may run after
// the handler destroyed its descriptor (closing is idempotent then).
class connection_stop {
 public:
  connection_stop(const descriptor& c, std::stop_token loop) : s_(c.state()) {
    s_->add_ref();
    // Runs at once if the loop has already stopped.
    on_loop_stop_.emplace(std::move(loop), closer{s_, &own_});
  }
  ~connection_stop() {
    on_loop_stop_.reset();  // waits for a callback running on another thread
    s_->release();
  }
  connection_stop(const connection_stop&) = delete;
  connection_stop& operator=(const connection_stop&) = delete;

  std::stop_token token() const noexcept { return own_.get_token(); }

 private:
  struct closer {
    detail::fd_state* s;
    std::stop_source* own;
    void operator()() const noexcept {
      own->request_stop();
      detail::close_state(*s);
    }
  };
  detail::fd_state* s_;
  std::stop_source own_;  // before on_loop_stop_, whose callback uses it
  std::optional<std::stop_callback<closer>> on_loop_stop_;
};

// Waits the retry pause after a transient accept failure; false if `stop`
// fired meanwhile. Called after the handler that saw the failure was left.
bool pause_before_retry(const std::stop_token& stop) {
  bool stopped = false;
  try {
    io::sleep_for(accept_retry_pause, stop).get();
  } catch (const cancelled&) {
    stopped = true;
  }
  return !stopped;
}

// A connection of a coroutine handler: the same life as the connection task
// of a plain handler below (slot, connection_stop, the report after the
// handler), as a coroutine, so the connection holds no fiber while it
// waits. Nothing is awaited inside the catch handler.
co::task<void> run_coroutine_connection(std::shared_ptr<listener::connection_handler> handler, descriptor c,
                                        std::stop_token token, std::function<void(std::exception_ptr)> on_error,
                                        std::shared_ptr<connection_limit> limit) {
  const connection_limit::slot held{limit.get()};
  std::exception_ptr ended;
  {
    const connection_stop stop(c, std::move(token));
    try {
      co_await handler->coroutine(std::move(c), stop.token());
    } catch (...) {
      ended = std::current_exception();
    }
  }
  if (ended && !normal_end(ended)) report(on_error, ended);
}

}  // namespace

listener listener::tcp(std::string_view host, std::uint16_t port, int backlog) {
  return bind_and_listen(detail::ip_address(host, port, "listen"), backlog);
}

listener listener::unix_socket(std::string_view path, int backlog) {
  return bind_and_listen(detail::unix_address(path, "listen"), backlog);
}

listener::listener(descriptor listening)
    : socket_(std::make_shared<descriptor>(std::move(listening))), tcp_(is_tcp(socket_->native_handle())) {}

listener::~listener() { close(); }

void listener::close() noexcept {
  if (socket_) socket_->close();
}

std::uint16_t listener::port() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  const int fd = socket_ ? socket_->native_handle() : -1;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) throw io::error(errno, "getsockname", fd);
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

future<descriptor> listener::accept(deadline until, std::stop_token stop) {
  return detail::accept_connection(*socket_, until, std::move(stop), tcp_);
}

future<void> listener::serve_erased(runtime& rt, std::shared_ptr<connection_handler> handler, serve_options options) {
  std::shared_ptr<descriptor> sock = socket_;
  const level at{options.level};  // std::out_of_range here if the runtime has no such level
  return rt.submit(at, [&rt, at, sock, tcp = tcp_, handler, options = std::move(options)] {
    // Stopped when this loop ends, however it ends: every connection it
    // started is closed (connection_stop). Operations given the token end with
    // io::cancelled or io::closed, whichever stop callback runs first.
    std::stop_source connections;
    // Shared with the connection tasks, which may outlive the loop.
    const auto limit = options.max_connections > 0 ? std::make_shared<connection_limit>(options.max_connections) : nullptr;
    std::exception_ptr failure;  // a fatal accept error, rethrown after the stop
    bool warned = false;
    try {
      for (;;) {
        descriptor c;
        bool transient = false;
        try {
          c = detail::accept_connection(*sock, {}, options.stop, tcp).get();
        } catch (const cancelled&) {
          break;  // options.stop
        } catch (const closed&) {
          break;  // listener::close() or the listener was destroyed
        } catch (const io::error& e) {
          if (!transient_accept_error(e.errno_value())) throw;
          if (!warned) {
            std::fprintf(stderr, "%s; the listener retries every %lld ms\n", e.what(),
                         static_cast<long long>(accept_retry_pause.count()));
            warned = true;
          }
          transient = true;  // the pause comes after this handler (see the top of the file)
        }
        if (transient) {
          if (!pause_before_retry(options.stop)) break;
          continue;
        }
        if (limit && !limit->try_open()) {
          std::exception_ptr refusal_failed;
          try {
            if (options.on_refused) options.on_refused(c);
          } catch (...) {
            refusal_failed = std::current_exception();
          }
          c.close();
          if (refusal_failed && !normal_end(refusal_failed)) report(options.on_error, refusal_failed);
          continue;
        }
        // The connection runs at the listener's level (the loop itself does too).
        if (handler->is_coroutine()) {
          (void)co::spawn(at, run_coroutine_connection(handler, std::move(c), connections.get_token(), options.on_error,
                                                       limit));
          continue;
        }
        auto connection = [handler, c = std::move(c), token = connections.get_token(), on_error = options.on_error,
                           limit]() mutable {
          // Given back as the task ends, after the handler returned and its
          // descriptor closed; null without a limit.
          const connection_limit::slot held{limit.get()};
          std::exception_ptr ended;
          {
            const connection_stop stop(c, token);
            try {
              (*handler)(std::move(c), stop.token());
            } catch (...) {
              ended = std::current_exception();
            }
          }
          if (ended && !normal_end(ended)) report(on_error, ended);
        };
        (void)rt.submit(at, std::move(connection));  // the handler reports its own errors (on_error)
      }
    } catch (...) {
      failure = std::current_exception();
    }
    // Outside any handler: stopping closes connections and wakes their tasks.
    connections.request_stop();
    if (failure) std::rethrow_exception(failure);
  });
}

}  // namespace promptly::io
