// The reactor thread (reactor.hpp) and io::stats().
#include "reactor.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <sched.h>

#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_set>

#if PROMPTLY_HAVE_LIBURING
#include <liburing.h>
#include <sys/syscall.h>
#endif

#include "../sched/chaos.hpp"
#include "../sched/external_poll.hpp"
#include "../sched/os_time_slice.hpp"
#include "backend.hpp"
#include "promptly/io/error.hpp"
#include "promptly/io/stats.hpp"

namespace promptly::io::detail {
namespace {

std::atomic<reactor*> the_reactor{nullptr};

// The latest request of a runtime_config (backend.hpp); automatic if none.
std::atomic<int> requested_backend{static_cast<int>(backend_choice::automatic)};

// What the reactor starts with: a runtime's request, else the environment.
backend_choice chosen_backend() {
  auto requested = static_cast<backend_choice>(requested_backend.load(std::memory_order_relaxed));
  if (requested != backend_choice::automatic) return requested;
  const char* env = std::getenv("PROMPTLY_IO_BACKEND");
  if (env == nullptr || *env == '\0') return backend_choice::automatic;
  try {
    return parse_backend(env);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "promptly::io: PROMPTLY_IO_BACKEND: %s; using auto\n", e.what());
    return backend_choice::automatic;
  }
}

int checked(int fd, const char* call) {
  if (fd < 0) throw io::error(errno, std::string("reactor start: ") + call, -1);
  return fd;
}

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// How long the reactor stands by after an idle worker's poll (README.md,
// "Idle workers poll"): a runtime's request, else PROMPTLY_IO_WORKER_POLL_US;
// 0 turns worker polls off. Two windows bound what a descriptor that
// becomes ready just after the workers' last poll can wait for the reactor
// (Go's sysmon polls the network every 20 us to 10 ms when no thread does).
constexpr std::int64_t default_worker_poll_us = 200;
// The latest request of a runtime_config (backend.hpp); -1 if none.
std::atomic<int> requested_worker_poll_us{-1};

std::int64_t standby_window_ns() {
  if (const int requested = requested_worker_poll_us.load(std::memory_order_relaxed); requested >= 0)  // relaxed: read once, at the reactor's start
    return std::int64_t{requested} * 1000;
  const char* env = std::getenv("PROMPTLY_IO_WORKER_POLL_US");
  if (env == nullptr || *env == '\0') return default_worker_poll_us * 1000;
  char* end = nullptr;
  errno = 0;
  const long long us = std::strtoll(env, &end, 10);
  if (errno != 0 || *end != '\0' || us < 0 || us > max_worker_poll_us) {
    std::fprintf(stderr, "promptly::io: PROMPTLY_IO_WORKER_POLL_US='%s' is not a number of microseconds in 0..%lld; using %lld\n",
                 env, static_cast<long long>(max_worker_poll_us), static_cast<long long>(default_worker_poll_us));
    return default_worker_poll_us * 1000;
  }
  return us * 1000;
}

// A child forked without exec shares the parent's epoll set (one open file
// description): its workers polling it would take the parent's events and
// read the parent's connections. The child has no reactor thread and must
// not use io:: (docs/io.md, "Limits"); its workers must not poll either.
std::atomic<bool> in_forked_child{false};
void stop_worker_polls_in_child() noexcept { in_forked_child.store(true, std::memory_order_relaxed); }  // relaxed: the child is single-threaded here

bool poll_for_idle_worker() noexcept {
  if (in_forked_child.load(std::memory_order_relaxed)) return false;  // relaxed: set before the child made any thread
  reactor* r = reactor::started();
  return r != nullptr && r->poll_from_idle_worker();
}

promptly::detail::external_wait_result wait_for_sleeping_worker(const std::atomic<std::uint32_t>& state, std::uint32_t asleep) noexcept {
  if (in_forked_child.load(std::memory_order_relaxed))  // relaxed: as poll_for_idle_worker
    return promptly::detail::external_wait_result::unavailable;
  reactor* r = reactor::started();
  return r != nullptr ? r->wait_from_sleeping_worker(state, asleep) : promptly::detail::external_wait_result::unavailable;
}

void ring_for_sleeping_worker() noexcept {
  if (reactor* r = reactor::started()) r->ring_doorbell();
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "promptly::io reactor: %s failed: %s\n", what, std::strerror(errno));
  std::abort();
}

}  // namespace

void request_worker_poll_us(int us) noexcept {
  if (us >= 0) requested_worker_poll_us.store(us, std::memory_order_relaxed);  // relaxed: as requested_backend
}

void request_backend(std::string_view name) {
  const backend_choice c = parse_backend(name);
  if (c != backend_choice::automatic) requested_backend.store(static_cast<int>(c), std::memory_order_relaxed);
}

#if PROMPTLY_HAVE_LIBURING
// The ring of the io_uring backend. Completion tags: a fd_state's address
// (its multishot poll), that address | 1 (its poll removal), or the
// addresses of reactor::timer_fd_ and reactor::wake_fd_ (their polls);
// states are at least 8-byte aligned, so bit 0 is free.
//
// Only the reactor thread submits (reactor.hpp, "Who submits"): other
// threads queue requests and write the eventfd.
struct reactor::uring {
  static constexpr unsigned sq_entries = 256;
  static constexpr unsigned cq_entries = 4096;  // multishot polls post many completions per submission
  // Edge-triggered like the epoll registration (io_uring's poll is
  // edge-triggered unless IORING_POLL_ADD_LEVEL is given).
  static constexpr unsigned poll_mask = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI;

  io_uring ring{};

  // A descriptor to start polling (arm) or to stop polling (remove),
  // queued by watch() and unwatch() for the reactor thread.
  struct request {
    fd_state* s;
    bool remove;
  };
  std::mutex requests_mu;
  std::vector<request> requests;  // guarded by requests_mu
  std::vector<request> taken;     // reactor thread only
  // Reactor thread only: closed states whose removal is submitted and not yet
  // retired. Their last reference is the ring's, which only the kernel names;
  // holding them here too keeps them reachable for LeakSanitizer when the
  // process exits with a removal in flight.
  std::unordered_set<fd_state*> retiring;
  // Reactor thread only: removals the kernel answered EALREADY (the poll was
  // being woken: its wake-up's completion work had not run), submitted
  // again at the next loop, after a wait has run that work.
  std::vector<fd_state*> removal_retries;

  // Readiness handed to idle workers (README.md, "Backends": idle workers
  // take ready descriptors): while completions come in bursts and a worker
  // polled within the window, the reactor queues each readiness event here
  // (holding a reference to its state) instead of handling it; an idle
  // worker's poll takes the queue and handles the events, and what no
  // worker took within a window the reactor handles itself.
  struct ready_event {
    fd_state* s;
    std::uint32_t events;
  };
  std::mutex ready_mu;
  std::vector<ready_event> ready;   // guarded by ready_mu
  std::int64_t ready_since_ns = 0;  // guarded by ready_mu: when the oldest entry came
  bool handing_off = false;         // reactor thread only: queue this batch's readiness

  // Batched waits (src/io/README.md, "Backends"). With DEFER_TASKRUN (Linux
  // 6.1+, which needs a single submitter) the completion work of the ring's
  // requests runs only when the reactor thread waits for completions, and
  // the kernel wakes that wait only once `batch` completions are pending or
  // its timeout passes. While completions come in bursts the reactor waits
  // for a batch, for at most one window; an idle reactor waits for the first
  // completion, so a lone event is not delayed. Without DEFER_TASKRUN every
  // completion wakes the reactor to run its work, whatever the wait asks.
  static constexpr unsigned batch = 64;
  bool disabled = false;       // created disabled: the reactor thread enables it (and is its single submitter)
  std::int64_t window_ns = 0;  // 0: plain waits
  bool bursting = false;       // the last wait found more than one completion

  // 0 or -errno of io_uring_queue_init_params. `window_ns` 0 asks for plain
  // waits.
  int init(std::int64_t batch_window_ns) noexcept {
    if (batch_window_ns > 0) {
      io_uring_params p{};
      p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
      p.cq_entries = cq_entries;
      if (io_uring_queue_init_params(sq_entries, &ring, &p) == 0) {
        if ((p.features & IORING_FEAT_EXT_ARG) != 0) {
          disabled = true;
          window_ns = batch_window_ns;
          return 0;
        }
        io_uring_queue_exit(&ring);
      }
      // An older kernel refuses the flags (EINVAL): the plain ring below. A
      // refusal of io_uring as such (ENOSYS, EPERM) repeats there and is
      // reported from there.
    }
    io_uring_params p{};
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = cq_entries;
    return io_uring_queue_init_params(sq_entries, &ring, &p);
  }

  // Reactor thread only: waits for completions; 0 or -errno. A deferred
  // ring's wait always enters the kernel, which runs the deferred work
  // first: liburing returns without entering when a completion is already
  // there, and a removal retried at once after EALREADY (submit_requests)
  // would find the poll's wake-up still pending, every time.
  int wait() noexcept {
    if (window_ns == 0) {
      io_uring_cqe* cqe = nullptr;
      return io_uring_wait_cqe(&ring, &cqe);
    }
    bool queued;
    {
      std::lock_guard lock(ready_mu);
      queued = !ready.empty();
    }
    if (!bursting && !queued) {  // queued readiness: the reactor looks again within a window
      const long r = ::syscall(__NR_io_uring_enter, ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, nullptr, 0);
      return r >= 0 ? 0 : -errno;
    }
    __kernel_timespec window{};
    window.tv_sec = window_ns / 1'000'000'000;
    window.tv_nsec = window_ns % 1'000'000'000;
    io_uring_cqe* cqe = nullptr;
    const int r = io_uring_wait_cqes(&ring, &cqe, batch, &window, nullptr);
    return r == -ETIME ? 0 : r;
  }
  // Reactor thread only: after a wait, `ready` completions were there.
  void waited(unsigned n) noexcept { bursting = window_ns > 0 && n > 1; }

  // Reactor thread only. A full submission queue is flushed first.
  io_uring_sqe* next_sqe() noexcept {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    while (sqe == nullptr) {
      io_uring_submit(&ring);
      sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
  }
  // 0 or the errno of the submission.
  int flush() noexcept {
    for (;;) {
      const int r = io_uring_submit(&ring);
      if (r >= 0) return 0;
      if (r != -EINTR && r != -EAGAIN && r != -EBUSY) return -r;
    }
  }
  // Submitted at once: the kernel takes its reference to the file during
  // the submission, which the caller makes while the fd is open.
  int arm_poll(std::uint64_t tag, int fd) noexcept {
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_poll_multishot(sqe, fd, poll_mask);
    sqe->user_data = tag;
    return flush();
  }
  // Prepared only: the next flush() submits it.
  void prep_remove(std::uint64_t tag) noexcept {
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_poll_remove(sqe, tag);
    sqe->user_data = tag | 1;
  }
};
#else
struct reactor::uring {};
#endif

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
    : timer_fd_(checked(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), "timerfd_create")),
      timers_(timer_fd_) {
  const backend_choice choice = chosen_backend();
#if PROMPTLY_HAVE_LIBURING
  // auto means epoll, the backend every process can run (backend.hpp).
  if (choice == backend_choice::io_uring) {
    auto* r = new uring;
    if (const int err = r->init(standby_window_ns()); err == 0) {
      ring_ = r;  // the reactor thread arms the timerfd's and the eventfd's polls as it starts
    } else {
      delete r;
      std::fprintf(stderr, "promptly::io: io_uring_queue_init failed (%s); the reactor uses epoll\n",
                   std::strerror(-err));
    }
  }
#else
  if (choice == backend_choice::io_uring)
    std::fprintf(stderr, "promptly::io: built without liburing; the reactor uses epoll\n");
#endif
  // Both backends: epoll's loop is woken to drop retired states, the
  // ring's to submit queued requests.
  wake_fd_ = checked(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd");
  if (ring_ == nullptr) {
    ep_ = internal_epoll_set();
    standby_ns_ = standby_window_ns();
    // The set the reactor waits on while idle workers poll ep_ (README.md,
    // "Idle workers poll").
    if (standby_ns_ > 0) {
      standby_ep_ = internal_epoll_set();
      // The sleeping worker's doorbell: edge-triggered, so a ring wakes one
      // waiter once and nobody spins on it (README.md, "A sleeping worker
      // waits in epoll"). Its counter is never read: every write is an edge.
      doorbell_fd_ = checked(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd");
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLET;
      ev.data.ptr = &doorbell_fd_;
      if (::epoll_ctl(ep_, EPOLL_CTL_ADD, doorbell_fd_, &ev) != 0) throw io::error(errno, "reactor start: epoll_ctl", doorbell_fd_);
    }
  }

  // The thread inherits a mask with every signal blocked (reactor.hpp).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_setname_np(thread_.native_handle(), "promptly-io");
  the_reactor.store(this, std::memory_order_release);  // publishes the constructed reactor
  // Idle workers poll the epoll set, or take the readiness a batching ring
  // queues for them; only an epoll worker may sleep in the set.
  bool ring_hands_off = false;
#if PROMPTLY_HAVE_LIBURING
  ring_hands_off = ring_ != nullptr && ring_->window_ns > 0;
#endif
  if (standby_ns_ > 0 || ring_hands_off) {
    ::pthread_atfork(nullptr, nullptr, &stop_worker_polls_in_child);
    promptly::detail::install_external_poll(&poll_for_idle_worker);
  }
  if (standby_ns_ > 0) promptly::detail::install_external_wait(&wait_for_sleeping_worker, &ring_for_sleeping_worker);
}

// A new epoll set holding the eventfd and the timerfd; events name them by
// the addresses of these members, which no fd_state pointer can equal.
int reactor::internal_epoll_set() {
  const int ep = checked(::epoll_create1(EPOLL_CLOEXEC), "epoll_create1");
  for (int* internal : {&wake_fd_, &timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = internal;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, *internal, &ev) != 0) throw io::error(errno, "reactor start: epoll_ctl", *internal);
  }
  return ep;
}

const char* reactor::backend_name() const noexcept { return ring_ != nullptr ? "io_uring" : "epoll"; }

int reactor::watch(fd_state& s) noexcept {
#if PROMPTLY_HAVE_LIBURING
  if (ring_ != nullptr) {
    // io_uring polls regular files and directories as always ready; epoll
    // refuses them with EPERM, which the callers take to mean "never
    // blocks": keep that contract.
    struct stat st {};
    if (::fstat(s.fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) return EPERM;
    s.add_ref();  // the ring's reference: a completion may name s from now on
    s.registered = true;
    watched_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
    // The reactor thread arms the poll if s is still open then; an edge
    // before that is not lost, since a poll reports the current readiness
    // when it is armed.
    hand_to_ring(s, false);
    return 0;
  }
#endif
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
#if PROMPTLY_HAVE_LIBURING
  if (ring_ != nullptr) {
    watched_.fetch_sub(1, std::memory_order_relaxed);  // a statistic: relaxed
    hand_to_ring(s, true);
    return;
  }
#endif
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
  retiring_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
  if (first) wake();
}

#if PROMPTLY_HAVE_LIBURING
void reactor::hand_to_ring(fd_state& s, bool remove) noexcept {
  bool first;
  {
    std::lock_guard lock(ring_->requests_mu);
    first = ring_->requests.empty();
    try {
      ring_->requests.push_back({&s, remove});
    } catch (...) {
      // Out of memory. An arm that is never made: the descriptor's
      // operations wait for their deadlines. A removal that is never made:
      // the state stays alive forever, the safe choice.
      return;
    }
  }
  if (first) wake();
}

// Reactor thread: submits the queued requests in their order, so a
// descriptor's removal comes after its arm.
void reactor::submit_requests() noexcept {
  {
    std::lock_guard lock(ring_->requests_mu);
    ring_->taken.swap(ring_->requests);
  }
  bool removals = !ring_->removal_retries.empty();
  for (fd_state* s : ring_->removal_retries) ring_->prep_remove(reinterpret_cast<std::uintptr_t>(s));
  ring_->removal_retries.clear();
  for (const uring::request& r : ring_->taken) {
    fd_state& s = *r.s;
    const auto tag = reinterpret_cast<std::uintptr_t>(&s);
    if (r.remove) {
      try {
        ring_->retiring.insert(&s);
      } catch (...) {
        // Out of memory: only LeakSanitizer's view of an exit mid-removal suffers.
      }
      ring_->prep_remove(tag);
      removals = true;
      continue;
    }
    // Armed under s.mu, where close() sets `closed` before it releases the
    // fd number: an open state's fd names its file during the submission.
    // A state closed before its poll was armed has no poll to end: that
    // end of its registration is seen now (its removal completes with
    // ENOENT, the other end).
    claimed_list failed;
    {
      std::lock_guard lock(s.mu);
      if (s.closed) {
        ++s.uring_ends;
      } else if (const int err = ring_->arm_poll(tag, s.fd); err != 0) {
        // No poll: that end is seen now. The waiting operations, and every
        // later one that would wait, fail with the submission's errno.
        ++s.uring_ends;
        s.watch_error = err;
        for (op_queue* q : {&s.readers, &s.writers}) {
          while (operation* op = q->front()) {
            q->erase(op);
            op->error = err;
            failed.push(op);
          }
        }
      }
    }
    failed.finish_all();
  }
  ring_->taken.clear();
  if (removals && ring_->flush() != 0) die("io_uring poll removal submission");
}
#else
void reactor::hand_to_ring(fd_state&, bool) noexcept {}
void reactor::submit_requests() noexcept {}
#endif

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
  if (gone.empty()) return;
  // An idle worker's poll may hold events it fetched before these states
  // left the epoll set: wait until no poll is in flight. One that starts
  // after this read calls epoll_wait after their EPOLL_CTL_DEL returned, so
  // it cannot report them. A poll is one non-blocking epoll_wait and the
  // handling of its events: the wait is short. Seq-cst: pairs with the
  // worker's exchange and store of the flag (poll_from_idle_worker).
  while (worker_polling_.load(std::memory_order_seq_cst)) sched_yield();
  // The same for a worker sleeping in ep_, whose epoll_wait may have started
  // before the EPOLL_CTL_DELs and may block for good: ring it awake and wait
  // until it finished a round (handled what it fetched; its next epoll_wait
  // starts after this read) or left. Seq-cst: pairs with its stores.
  if (external_waiting_.load(std::memory_order_seq_cst)) {
    const std::uint64_t round = external_rounds_.load(std::memory_order_seq_cst);
    ring_doorbell();
    while (external_waiting_.load(std::memory_order_seq_cst) && external_rounds_.load(std::memory_order_seq_cst) == round)
      sched_yield();
  }
  for (fd_state* s : gone) s->release();
  retiring_.fetch_sub(gone.size(), std::memory_order_relaxed);  // a statistic: relaxed
}

void reactor::run() noexcept {
  // The shortest slice the kernel gives (EEVDF, Linux 6.12+; ignored elsewhere): woken by
  // readiness while the workers run strands on every CPU, the thread that makes the waiting
  // task ready must get a CPU at once, not at the end of a worker's slice. It runs briefly
  // per event, so its share of the CPU does not change.
  (void)promptly::detail::request_os_time_slice(promptly::detail::min_os_time_slice);
#if PROMPTLY_HAVE_LIBURING
  if (ring_ != nullptr) {
    run_uring();
    return;
  }
#endif
  run_epoll();
}

#if PROMPTLY_HAVE_LIBURING
void reactor::run_uring() noexcept {
  // The single submitter of a ring created disabled is the thread that
  // enables it.
  // (liburing 2.3 declares io_uring_enable_rings but does not export it.)
  if (ring_->disabled &&
      ::syscall(__NR_io_uring_register, ring_->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) != 0)
    die("io_uring_register(IORING_REGISTER_ENABLE_RINGS)");
  for (const int* internal : {&timer_fd_, &wake_fd_})
    if (ring_->arm_poll(reinterpret_cast<std::uintptr_t>(internal), *internal) != 0) die("io_uring poll of an internal descriptor");
  for (;;) {
    submit_requests();
    take_ring_ready(/*from_reactor=*/true);
    io_uring_cqe* cqe = nullptr;
    const int r = ring_->wait();
    if (r == -EINTR || r == -EAGAIN) continue;
    if (r < 0) {
      errno = -r;
      die("io_uring_wait_cqe");
    }
    wakeups_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
    // Every completion answers a submission of this thread: the states it
    // names were handed over through requests_mu, which orders what their
    // threads did before (building the state) before this use.
    const unsigned ready = io_uring_cq_ready(&ring_->ring);
    ring_->waited(ready);
    // Relaxed: a hint; the window bounds what a stale read costs.
    ring_->handing_off = ring_->bursting && steady_ns() - worker_polled_ns_.load(std::memory_order_relaxed) < ring_->window_ns;
    for (unsigned i = 0; i < ready; ++i) {
      if (io_uring_peek_cqe(&ring_->ring, &cqe) != 0 || cqe == nullptr) break;
      const std::uint64_t tag = cqe->user_data;
      const int res = cqe->res;
      const unsigned flags = cqe->flags;
      io_uring_cqe_seen(&ring_->ring, cqe);  // handling may submit; the slot is free first
      on_uring_completion(tag, res, flags);
    }
  }
}

void reactor::on_uring_completion(std::uint64_t tag, int res, unsigned flags) noexcept {
  const bool more = (flags & IORING_CQE_F_MORE) != 0;
  if (tag == reinterpret_cast<std::uintptr_t>(&timer_fd_)) {
    on_timer();
    if (!more && ring_->arm_poll(tag, timer_fd_) != 0) die("io_uring poll of the timerfd");
    return;
  }
  if (tag == reinterpret_cast<std::uintptr_t>(&wake_fd_)) {  // requests wait: the loop submits them next
    std::uint64_t count;
    while (::read(wake_fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
    if (!more && ring_->arm_poll(tag, wake_fd_) != 0) die("io_uring poll of the eventfd");
    return;
  }
  if (tag & 1) {  // a poll removal finished: one end of a closed state's registration
    fd_state& s = *reinterpret_cast<fd_state*>(tag & ~std::uint64_t{1});
    // EALREADY: the poll was not removed; it stays armed, holding its file
    // open (a peer would never see the end of file), until a removal finds
    // it idle. Out of memory for the retry: counted as this end, so the
    // state and its file leak (they are freed only after both ends), never
    // freed under the armed poll.
    if (res == -EALREADY) {
      try {
        ring_->removal_retries.push_back(&s);
        return;
      } catch (...) {
      }
    }
    retire_uring_end(s);
    return;
  }
  fd_state& s = *reinterpret_cast<fd_state*>(tag);
  if (more) {
    if (res > 0) {
      if (ring_->handing_off) {
        try {
          std::lock_guard lock(ring_->ready_mu);
          if (ring_->ready.empty()) ring_->ready_since_ns = steady_ns();
          ring_->ready.push_back({&s, static_cast<std::uint32_t>(res)});
          s.add_ref();  // the queue's: a worker may handle it after the state's retirement
          return;
        } catch (...) {
          // Out of memory: handled here, as without workers.
        }
      }
      on_ready(s, static_cast<std::uint32_t>(res));
      counted_reactor_event();
    }
    return;
  }
  // The poll ended. Open: arm a new one (under s.mu, so that a close's
  // removal comes after it) and attempt both queues, since an edge may have
  // passed between the two polls. Closed: one end of the registration.
  bool closed;
  {
    std::lock_guard lock(s.mu);
    closed = s.closed;
    if (!closed && ring_->arm_poll(tag, s.fd) != 0) die("io_uring poll re-arm");
  }
  if (closed) {
    retire_uring_end(s);
  } else {
    on_ready(s, EPOLLIN | EPOLLOUT);
    counted_reactor_event();
  }
}

// Handles the readiness queued for workers: all of it (an idle worker's
// poll), or, for the reactor, what has waited a window.
bool reactor::take_ring_ready(bool from_reactor) noexcept {
  thread_local std::vector<uring::ready_event> taken;
  {
    std::lock_guard lock(ring_->ready_mu);
    if (ring_->ready.empty() || (from_reactor && steady_ns() - ring_->ready_since_ns < ring_->window_ns)) return false;
    taken.swap(ring_->ready);
  }
  if (!from_reactor && promptly::detail::chaos::worker_poll_stalls()) [[unlikely]]
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (const uring::ready_event& e : taken) {
    on_ready(*e.s, e.events);
    e.s->release();
    if (from_reactor)
      counted_reactor_event();
    else
      worker_events_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
  }
  taken.clear();
  return true;
}

bool reactor::poll_ring_from_idle_worker() noexcept {
  // One poll at a time, as with epoll: a second would find the queue empty.
  if (worker_polling_.load(std::memory_order_relaxed) || worker_polling_.exchange(true, std::memory_order_acq_rel))
    return false;
  const bool took = take_ring_ready(/*from_reactor=*/false);
  worker_polls_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
  worker_polling_.store(false, std::memory_order_release);
  // Relaxed: a hint for the reactor's hand-off; the window bounds its staleness.
  worker_polled_ns_.store(steady_ns(), std::memory_order_relaxed);
  return took;
}

void reactor::retire_uring_end(fd_state& s) noexcept {
  if (++s.uring_ends == 2) {
    ring_->retiring.erase(&s);
    s.release();
  }
}
#else
void reactor::run_uring() noexcept {}
void reactor::on_uring_completion(std::uint64_t, int, unsigned) noexcept {}
void reactor::retire_uring_end(fd_state&) noexcept {}
bool reactor::take_ring_ready(bool) noexcept { return false; }
bool reactor::poll_ring_from_idle_worker() noexcept { return false; }
#endif

void reactor::run_epoll() noexcept {
  constexpr int batch = 256;
  epoll_event events[batch];
  for (;;) {
    // Safe point: every event fetched so far has been processed (Retiring).
    drop_retired();
    int n;
    if (standing_by()) {
      const std::int64_t window_start = steady_ns();
      wait_standing_by();
      // No worker polled during the window: what became ready since their
      // last poll has waited at most two windows; the reactor takes it now.
      // Otherwise the workers' next poll takes it, and the reactor does not
      // compete with them for the events. The window does not stretch while
      // polls keep finding work: a stretched one kept readiness waiting
      // whenever every worker turned busy (README.md, "Idle workers poll",
      // Fixed windows). Relaxed: a hint, the window bounds its staleness.
      const std::int64_t polled = worker_polled_ns_.load(std::memory_order_relaxed);
      n = polled >= window_start ? 0 : ::epoll_wait(ep_, events, batch, 0);
    } else {
      n = ::epoll_wait(ep_, events, batch, -1);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    wakeups_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
    handle_epoll_events(events, n);
  }
}

void reactor::handle_epoll_events(const epoll_event* events, int n) noexcept {
  for (int i = 0; i < n; ++i) {
    void* tag = events[i].data.ptr;
    if (tag == &wake_fd_) {
      std::uint64_t count;
      while (::read(wake_fd_, &count, sizeof count) < 0 && errno == EINTR) {
      }
    } else if (tag == &timer_fd_) {
      on_timer();
    } else if (tag == &doorbell_fd_) {
      pass_on_doorbell();
    } else {
      on_ready(*static_cast<fd_state*>(tag), events[i].events);
      counted_reactor_event();
    }
  }
}

// An idle worker's poll of ep_ found work within the last window: the
// workers cover the descriptors, and the reactor waits for its own two only.
bool reactor::standing_by() const noexcept {
  if (standby_ns_ == 0) return false;
  const std::int64_t fruitful = worker_fruitful_ns_.load(std::memory_order_relaxed);  // relaxed: a hint, the window bounds its staleness
  return fruitful != 0 && steady_ns() - fruitful < standby_ns_;
}

// One window on the standby set: the wake-up eventfd and the timerfd.
void reactor::wait_standing_by() noexcept {
  epoll_event events[2];
  const timespec window{static_cast<time_t>(standby_ns_ / 1'000'000'000), static_cast<long>(standby_ns_ % 1'000'000'000)};
  int n = ::epoll_pwait2(standby_ep_, events, 2, &window, nullptr);
  if (n < 0 && errno == ENOSYS)  // before Linux 5.11: millisecond resolution
    n = ::epoll_wait(standby_ep_, events, 2, static_cast<int>((standby_ns_ + 999'999) / 1'000'000));
  if (n < 0) {
    if (errno == EINTR) return;
    die("epoll_wait (standby)");
  }
  handle_epoll_events(events, n);
}

bool reactor::poll_from_idle_worker() noexcept {
  assert(std::this_thread::get_id() != thread_.get_id() && "the reactor thread polls in run_epoll");
  if (ring_ != nullptr) return poll_ring_from_idle_worker();
  // One poll at a time; the relaxed read first keeps spinning thieves off
  // the flag's cache line while another polls.
  if (worker_polling_.load(std::memory_order_relaxed) || worker_polling_.exchange(true, std::memory_order_seq_cst))
    return false;
  constexpr int batch = 64;
  epoll_event events[batch];
  const int n = ::epoll_wait(ep_, events, batch, 0);
  // Events fetched, not yet handled: closes of their descriptors and the
  // reactor's drop_retired may run now.
  if (n > 0 && promptly::detail::chaos::worker_poll_stalls()) [[unlikely]]
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  bool completed = false;
  for (int i = 0; i < n; ++i) {
    void* tag = events[i].data.ptr;
    // The eventfd and the timerfd are level-triggered and belong to the
    // reactor thread (it alone frees retired states and pops timers): left
    // to it, they stay reported until it reads them.
    if (tag == &wake_fd_ || tag == &timer_fd_) continue;
    if (tag == &doorbell_fd_) {
      pass_on_doorbell();
      continue;
    }
    on_ready(*static_cast<fd_state*>(tag), events[i].events);
    completed = true;
    worker_events_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
  }
  worker_polls_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
  // Seq-cst: pairs with drop_retired's read; every use of a state this poll
  // fetched happens before it.
  worker_polling_.store(false, std::memory_order_seq_cst);
  // Only a fruitful poll makes the reactor stand by: idle workers that find
  // nothing (the reactor took the event that woke them) go to sleep, and a
  // reactor standing by for them would only wake once more per event.
  // Relaxed: hints (standing_by, run_epoll); a window bounds their staleness.
  const std::int64_t now = steady_ns();
  worker_polled_ns_.store(now, std::memory_order_relaxed);
  if (completed) worker_fruitful_ns_.store(now, std::memory_order_relaxed);
  return completed;
}

void reactor::ring_doorbell() noexcept {
  if (doorbell_fd_ < 0) return;
  std::uint64_t one = 1;
  while (::write(doorbell_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

// The doorbell was fetched by a thread that is not the sleeping worker (it
// was not blocked in ep_ at that moment): ring it again if a worker sleeps
// there, so its wait ends. The caller is not blocked in ep_ now, so the
// kernel gives the new edge to the sleeping worker, or keeps it for its next
// epoll_wait. The reactor then stands by for a window instead of fetching
// the edge again itself while the worker is on its way into epoll_wait.
void reactor::pass_on_doorbell() noexcept {
  if (!external_waiting_.load(std::memory_order_seq_cst)) return;  // seq-cst: the notifier's state change precedes its ring
  ring_doorbell();
  worker_fruitful_ns_.store(steady_ns(), std::memory_order_relaxed);  // relaxed: a hint (standing_by)
}

promptly::detail::external_wait_result reactor::wait_from_sleeping_worker(const std::atomic<std::uint32_t>& state,
                                                                          std::uint32_t asleep) noexcept {
  using promptly::detail::external_wait_result;
  assert(std::this_thread::get_id() != thread_.get_id() && "the reactor thread waits in run_epoll");
  // One sleeping worker at a time; the relaxed read first keeps sleepers off
  // the flag's cache line while another sleeps.
  if (external_waiting_.load(std::memory_order_relaxed) || external_waiting_.exchange(true, std::memory_order_seq_cst))
    return external_wait_result::unavailable;
  worker_sleeps_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
  bool made_ready = false;
  bool give_up = false;
  constexpr int batch = 64;
  epoll_event events[batch];
  // The state is re-read before every block: a notifier changes it before
  // it rings, so a ring that ends no block finds the loop leaving.
  while (!made_ready && !give_up && state.load(std::memory_order_seq_cst) == asleep) {
    if (promptly::detail::chaos::worker_sleep_stalls()) [[unlikely]]
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int n = ::epoll_wait(ep_, events, batch, -1);
    // Events fetched, not yet handled (as in poll_from_idle_worker).
    if (n > 0 && promptly::detail::chaos::worker_poll_stalls()) [[unlikely]]
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &doorbell_fd_) continue;  // for this wait: the state is re-read
      if (tag == &wake_fd_ || tag == &timer_fd_) {
        // The reactor's work: retired states to free, timers to pop (the
        // reactor injects the woken tasks in firing order; this worker's
        // deque would run a batch of them last first). Both descriptors are
        // level-triggered, so the kernel wakes the reactor next; this worker
        // sleeps on its futex meanwhile instead of fetching them again.
        give_up = true;
      } else {
        on_ready(*static_cast<fd_state*>(tag), events[i].events);
        made_ready = true;
        worker_events_.fetch_add(1, std::memory_order_relaxed);  // a statistic: relaxed
      }
    }
    // Seq-cst: after this round's events were handled; pairs with drop_retired.
    external_rounds_.fetch_add(1, std::memory_order_seq_cst);
  }
  external_waiting_.store(false, std::memory_order_seq_cst);  // pairs with drop_retired and pass_on_doorbell
  // Relaxed: hints, as in poll_from_idle_worker.
  const std::int64_t now = steady_ns();
  worker_polled_ns_.store(now, std::memory_order_relaxed);
  if (made_ready) {
    worker_fruitful_ns_.store(now, std::memory_order_relaxed);
    return external_wait_result::made_ready;
  }
  return give_up ? external_wait_result::unavailable : external_wait_result::woken;
}

void reactor::on_ready(fd_state& s, std::uint32_t events) noexcept {
  promptly::detail::chaos::ready_event_gate.pass();
  claimed_list done;
  {
    std::lock_guard lock(s.mu);
    if (!s.closed) {
      // Errors and hang-ups wake both directions: the attempts then report
      // the error (ECONNRESET, EPIPE) or the end of the stream.
      if (events & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        s.readable_reported((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
        drain(s.readers, done);
      }
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
    s.worker_polls = r->worker_polls();
    s.worker_events = r->worker_events();
    s.reactor_events = r->reactor_events();
    s.worker_sleeps = r->worker_sleeps();
    s.worker_sleeping = r->worker_sleeping();
    s.retiring_descriptors = r->retiring();
    s.backend = r->backend_name();
  }
  return s;
}

}  // namespace promptly::io
