// The reactor thread (reactor.hpp) and io::stats().
#include "reactor.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "promptly/io/error.hpp"
#include "promptly/io/stats.hpp"

namespace promptly::io::detail {
namespace {

std::atomic<reactor*> the_reactor{nullptr};

int checked(int fd, const char* call) {
  if (fd < 0) throw io::error(errno, std::string("reactor start: ") + call, -1);
  return fd;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "promptly::io reactor: %s failed: %s\n", what, std::strerror(errno));
  std::abort();
}

}  // namespace

reactor& reactor::instance() {
  // Constructed on first use and never destroyed (src/io/README.md): tasks,
  // other threads and static destructors may still use io:: at exit, and
  // the thread blocked in epoll_wait costs nothing then. If construction
  // throws, the next call tries again.
  static reactor* r = new reactor();
  return *r;
}

// Acquire pairs with the constructor's release: a caller that sees the
// pointer sees the constructed reactor.
reactor* reactor::started() noexcept { return the_reactor.load(std::memory_order_acquire); }

reactor::reactor()
    : ep_(checked(::epoll_create1(EPOLL_CLOEXEC), "epoll_create1")),
      wake_fd_(checked(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd")),
      timer_fd_(checked(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), "timerfd_create")),
      timers_(timer_fd_) {
  // The two internal descriptors are told apart from fd_state pointers by
  // the addresses of these members.
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &wake_fd_;
  if (::epoll_ctl(ep_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0)
    throw io::error(errno, "reactor start: epoll_ctl", wake_fd_);
  ev.data.ptr = &timer_fd_;
  if (::epoll_ctl(ep_, EPOLL_CTL_ADD, timer_fd_, &ev) != 0)
    throw io::error(errno, "reactor start: epoll_ctl", timer_fd_);

  // The thread inherits a mask with every signal blocked (reactor.hpp).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_setname_np(thread_.native_handle(), "promptly-io");
  the_reactor.store(this, std::memory_order_release);  // publishes the constructed reactor
}

int reactor::watch(fd_state& s) noexcept {
  epoll_event ev{};
  // Edge-triggered, both directions, once: no re-arming per operation.
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET;
  ev.data.ptr = &s;
  if (::epoll_ctl(ep_, EPOLL_CTL_ADD, s.fd, &ev) != 0) return errno;
  s.add_ref();  // the epoll reference
  s.registered = true;
  watched_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
  return 0;
}

void reactor::unwatch(fd_state& s) noexcept {
  ::epoll_ctl(ep_, EPOLL_CTL_DEL, s.fd, nullptr);
  watched_.fetch_sub(1, std::memory_order_relaxed);  // a statistic: relaxed
  bool first;
  {
    std::lock_guard lock(retire_mu_);
    first = retired_.empty();
    try {
      retired_.push_back(&s);
    } catch (...) {
      // Out of memory: keeping the state alive forever is the safe choice.
      return;
    }
  }
  if (first) wake();
}

void reactor::wake() noexcept {
  std::uint64_t one = 1;
  while (::write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void reactor::drop_retired() noexcept {
  std::vector<fd_state*> gone;
  {
    std::lock_guard lock(retire_mu_);
    gone.swap(retired_);
  }
  for (fd_state* s : gone) s->release();
}

void reactor::run() noexcept {
  constexpr int batch = 256;
  epoll_event events[batch];
  for (;;) {
    // Safe point: every event fetched so far has been processed (Retiring).
    drop_retired();
    int n = ::epoll_wait(ep_, events, batch, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    wakeups_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &wake_fd_) {
        std::uint64_t count;
        while (::read(wake_fd_, &count, sizeof count) < 0 && errno == EINTR) {
        }
      } else if (tag == &timer_fd_) {
        on_timer();
      } else {
        on_ready(*static_cast<fd_state*>(tag), events[i].events);
      }
    }
  }
}

void reactor::on_ready(fd_state& s, std::uint32_t events) noexcept {
  claimed_list done;
  {
    std::lock_guard lock(s.mu);
    if (!s.closed) {
      // Errors and hang-ups wake both directions: the attempts then report
      // the error (ECONNRESET, EPIPE) or the end of the stream.
      if (events & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) drain(s.readers, done);
      if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) drain(s.writers, done);
    }
  }
  done.finish_all();
}

void reactor::on_timer() noexcept {
  std::uint64_t expirations;
  while (::read(timer_fd_, &expirations, sizeof expirations) < 0 && errno == EINTR) {
  }
  timers_.pop_expired(expired_);
  for (operation* op : expired_) expire_deadline(op);
  expired_.clear();
}

}  // namespace promptly::io::detail

namespace promptly::io {

reactor_stats stats() noexcept {
  reactor_stats s;
  s.pending_operations = detail::pending_operations();
  if (detail::reactor* r = detail::reactor::started()) {
    s.running = true;
    s.pending_timers = r->timers().size();
    s.watched_descriptors = r->watched();
    s.wakeups = r->wakeups();
  }
  return s;
}

}  // namespace promptly::io
