// sleep_until, sleep_for and periodic_timer: timer-only operations
// (operation.hpp) that the reactor's timer queue fires.
#include "promptly/io/timers.hpp"

#include <atomic>
#include <stdexcept>

#include "operation.hpp"

namespace promptly::io {

struct periodic_timer::state {
  state(std::chrono::nanoseconds p, clock::time_point first) : period(p), next(first) {}
  const std::chrono::nanoseconds period;
  // Written by a pending tick's expire() (reactor thread) and read by the
  // owner only after that tick's future is ready or before it starts.
  clock::time_point next;
  std::atomic<bool> pending{false};
};

namespace detail {
namespace {

class sleep_operation final : public basic_operation<void> {
 public:
  explicit sleep_operation(clock::time_point at) noexcept : basic_operation("sleep", nullptr, direction::in, at) {}
};

class tick_operation final : public basic_operation<std::uint64_t> {
 public:
  explicit tick_operation(std::shared_ptr<periodic_timer::state> st) noexcept
      : basic_operation("tick", nullptr, direction::in, st->next), st_(std::move(st)) {}

  // The scheduled tick passed: count the ticks that passed since (missed
  // ones coalesce) and move the schedule on, never drifting from it.
  void expire() noexcept override {
    const auto now = clock::now();
    const auto late = now - st_->next;
    ticks_ = 1 + static_cast<std::uint64_t>(late / st_->period);
    st_->next += st_->period * static_cast<std::int64_t>(ticks_);
  }

  void deliver() noexcept override {
    // Before the future is ready, so a tick() right after get() is allowed.
    // Release: expire()'s write of `next` reaches the next tick()'s acquire.
    st_->pending.store(false, std::memory_order_release);
    basic_operation::deliver();
  }

 private:
  std::uint64_t take_result() override { return ticks_; }
  std::shared_ptr<periodic_timer::state> st_;
  std::uint64_t ticks_ = 0;
};

}  // namespace
}  // namespace detail

future<void> sleep_until(clock::time_point t, std::stop_token stop) {
  auto* op = new detail::sleep_operation(t);
  auto f = op->get_future();
  detail::start(op, stop);
  return f;
}

future<void> sleep_for(std::chrono::nanoseconds d, std::stop_token stop) {
  const auto now = clock::now();
  const auto at = d >= clock::time_point::max() - now ? clock::time_point::max() : now + d;
  return sleep_until(at, std::move(stop));
}

periodic_timer::periodic_timer(std::chrono::nanoseconds period) : periodic_timer(period, clock::now() + period) {}

periodic_timer::periodic_timer(std::chrono::nanoseconds period, clock::time_point first) {
  if (period <= std::chrono::nanoseconds::zero())
    throw std::invalid_argument("promptly::io::periodic_timer: the period must be > 0");
  state_ = std::make_shared<state>(period, first);
}

periodic_timer::~periodic_timer() = default;

future<std::uint64_t> periodic_timer::tick(std::stop_token stop) {
  if (!state_) throw std::logic_error("promptly::io::periodic_timer::tick on a moved-from timer");
  // Acquire pairs with deliver()'s release (the previous tick's `next`); the
  // release half is not needed (the new tick reaches the reactor under the
  // timer queue's mutex).
  if (state_->pending.exchange(true, std::memory_order_acq_rel))
    throw std::logic_error("promptly::io::periodic_timer::tick: the previous tick is still pending");
  auto* op = new detail::tick_operation(state_);
  auto f = op->get_future();
  detail::start(op, stop);
  return f;
}

std::chrono::nanoseconds periodic_timer::period() const noexcept { return state_->period; }
clock::time_point periodic_timer::next() const noexcept { return state_->next; }

}  // namespace promptly::io
