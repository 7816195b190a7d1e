// Starting and completing operations: the claim protocol of operation.hpp.
// Each path below names the lock that makes its claim exclusive.
#include "operation.hpp"

#include <cassert>
#include <cerrno>

#include "fd_state.hpp"
#include "promptly/detail/worker_view.hpp"
#include "promptly/io/error.hpp"
#include "reactor.hpp"
#include "../sched/chaos.hpp"

namespace promptly::io::detail {

namespace {
// Started and not yet delivered (io::stats()).
std::atomic<std::uint64_t> pending_count{0};

// Registers `s` with the reactor (starting it if needed) under s.mu.
// Returns 0 or the errno that prevents waiting for readiness.
int ensure_watched(fd_state& s) noexcept {
  if (s.watch_error != 0) return s.watch_error;
  if (s.registered) return 0;
  try {
    return reactor::instance().watch(s);
  } catch (const io::error& e) {
    return e.errno_value() != 0 ? e.errno_value() : EIO;
  } catch (...) {
    return ENOMEM;
  }
}

// Unlinks a pending fd operation (caller holds s.mu) and, if it was the head
// of its queue, attempts the new head: the readiness edge that the removed
// operation was waiting for may already have been consumed by the reactor
// while the removed one sat in front, so the next one must not wait for
// another edge (nothing hangs silently).
void unlink_and_kick(fd_state& s, operation* op, claimed_list& done) noexcept {
  op_queue& q = s.queue(op->dir);
  const bool was_head = q.front() == op;
  q.erase(op);
  if (was_head && !s.closed) drain(q, done);
}

void start_fd_operation(operation* op) noexcept {
  fd_state& s = *op->fd;
  bool queued = false;
  {
    std::lock_guard lock(s.mu);
    op_queue& q = s.queue(op->dir);
    if (s.closed) {
      op->error = err_closed;
    } else if (op->cancel_requested.load(std::memory_order_acquire)) {  // pairs with the callback's release
      op->error = err_cancelled;  // the stop callback ran before we linked
    } else if (q.empty() && op->attempt()) {
      // Completed at once (the common case when data is already there).
    } else if (deadline_passed(op->deadline)) {
      op->error = err_deadline;
    } else if (int e = ensure_watched(s); e != 0) {
      op->error = e;
    } else {
      q.push_back(op);
      queued = true;
      if (op->has_deadline()) {
        // Lock order: fd_state::mu, then the timer queue's mutex (the only
        // place both are held; no path takes them the other way round).
        reactor::instance().timers().schedule(op);
        op->timer_scheduled = true;
      }
    }
  }
  if (!queued) finish_claimed(op);
}

void start_timer_operation(operation* op) noexcept {
  if (op->deadline <= clock::now()) {
    op->expire();
    finish_claimed(op);
    return;
  }
  bool scheduled = false;
  try {
    scheduled = reactor::instance().timers().schedule_unless_cancelled(op);
    if (!scheduled) op->error = err_cancelled;
  } catch (const io::error& e) {
    op->error = e.errno_value() != 0 ? e.errno_value() : EIO;
  } catch (...) {
    op->error = ENOMEM;
  }
  if (!scheduled) finish_claimed(op);
}

}  // namespace

// Acquire: pairs with the constructor's release increment (below).
std::uint64_t pending_operations() noexcept { return pending_count.load(std::memory_order_acquire); }

operation::operation(const char* name_, fd_state* fd_, direction dir_, clock::time_point deadline_) noexcept
    : name(name_), fd(fd_), fd_number(fd_ != nullptr ? fd_->fd : -1), dir(dir_), deadline(deadline_) {
  if (fd != nullptr) fd->add_ref();
  // Release: a thread that sees the count grow (io::stats) sees what the
  // caller did before starting the operation, such as reading the
  // descriptor object; tests wait for it before they destroy that object.
  pending_count.fetch_add(1, std::memory_order_release);
}

operation::~operation() {
  // First: waits for a stop callback running on another thread, which may
  // still lock fd->mu (operation.hpp).
  on_stop.reset();
  if (fd != nullptr) fd->release();
}

void release(operation* op) noexcept {
  // Acq_rel: whoever deletes sees every other claimant's writes.
  if (op->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) op->released();
}

void finish_claimed(operation* op) noexcept {
  assert(!op->linked && "a claimed operation is in no queue");
  // The claim was made under fd->mu (or the timer mutex), which also
  // ordered the write of timer_scheduled before this read.
  if (op->timer_scheduled && reactor::started()->timers().remove(op))
    release(op);  // the heap's reference; never the last, the claim holds one
  pending_count.fetch_sub(1, std::memory_order_relaxed);  // a statistic: relaxed
  op->deliver();
  release(op);  // the claim
}

namespace {

void start_checked(operation* op, const std::stop_token& stop) {
  if (stop.stop_requested()) {
    op->error = err_cancelled;
    finish_claimed(op);
    return;
  }
  // Registered before the operation becomes visible to anyone else; if the
  // stop is requested in between (even inside this constructor), the
  // callback sets cancel_requested, which the start paths check under the
  // lock that linking takes.
  if (stop.stop_possible()) op->on_stop.emplace(stop, cancel_on_stop{op});
  if (op->fd != nullptr)
    start_fd_operation(op);
  else
    start_timer_operation(op);
}

}  // namespace

void start(operation* op, const std::stop_token& stop) {
  // An I/O call is a strand boundary (DESIGN.md): if the policy moved this
  // worker to another level, the calling task parks here as a ready
  // continuation of its own level. Nothing is visible to others yet.
  promptly::detail::at_strand_boundary(promptly::detail::current_worker());
  start_checked(op, stop);
}

void start_after_miss(operation* op, const std::stop_token& stop) {
  promptly::detail::chaos::at_once_miss_gate.pass();
  start_checked(op, stop);
}

void cancel_on_stop::operator()() noexcept {
  operation* o = op;  // `this` lives inside *o and may die with it below
  // Release: pairs with the start paths' acquire loads (they then see the
  // stop before linking; the lock they take decides who completes).
  o->cancel_requested.store(true, std::memory_order_release);
  bool claimed = false;
  if (fd_state* s = o->fd) {
    claimed_list done;
    {
      std::lock_guard lock(s->mu);
      if (o->linked) {
        unlink_and_kick(*s, o, done);
        claimed = true;
      }
    }
    done.finish_all();
  } else if (reactor* r = reactor::started()) {
    claimed = r->timers().remove(o);  // timer-only: in the heap <=> pending
  }
  if (!claimed) return;
  o->error = err_cancelled;
  // May free *o and with it this callback object, while it runs: allowed
  // for std::stop_callback ([stopcallback.cons]); nothing below touches it.
  finish_claimed(o);
}

void expire_deadline(operation* op) noexcept {
  if (op->fd == nullptr) {  // a sleep or tick: popping it was the claim
    op->expire();
    finish_claimed(op);
    return;
  }
  fd_state& s = *op->fd;
  bool claimed = false;
  claimed_list done;
  {
    std::lock_guard lock(s.mu);
    if (op->linked) {
      unlink_and_kick(s, op, done);
      claimed = true;
    }
  }
  done.finish_all();
  if (claimed) {
    op->error = err_deadline;
    finish_claimed(op);
  }
  release(op);  // the heap's reference, handed to us by pop_expired
}

void drain(op_queue& q, claimed_list& done) noexcept {
  while (operation* op = q.front()) {
    if (!op->attempt()) return;  // would block: wait for the next edge
    q.erase(op);
    done.push(op);
  }
}

}  // namespace promptly::io::detail
