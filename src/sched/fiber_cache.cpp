// The fibers of a scheduler (fiber_cache.hpp states the invariants).
#include "fiber_cache.hpp"

#include <algorithm>
#include <cstdint>

namespace promptly::detail {

namespace {
constexpr std::size_t idle_fibers_kept = 16;  // per worker; beyond it half go to the shared spares
}  // namespace

fiber_record* fiber_cache::take_own_idle(worker& w) noexcept {
  if (w.idle.empty()) return nullptr;
  fiber_record* f = w.idle.back();
  w.idle.pop_back();
  return f;
}

fiber_record* fiber_cache::take_spare() noexcept {
  std::lock_guard lock(mutex_);
  if (spare_.empty()) return nullptr;
  fiber_record* f = spare_.back();
  spare_.pop_back();
  return f;
}

void fiber_cache::make_idle(worker& w, fiber_record& f) {
  w.idle.push_back(&f);
  if (w.idle.size() <= idle_fibers_kept) return;
  std::lock_guard lock(mutex_);
  while (w.idle.size() > idle_fibers_kept / 2) {
    spare_.push_back(w.idle.back());
    w.idle.pop_back();
  }
}

fiber_cache::taken fiber_cache::take_spare_or_make() {
  std::lock_guard lock(mutex_);
  if (!spare_.empty()) {
    fiber_record* f = spare_.back();
    spare_.pop_back();
    return {f, false};
  }
  fibers_.push_back(std::make_unique<fiber_record>());
  fiber_record* rec = fibers_.back().get();
  rec->trace_number = static_cast<std::uint16_t>((fibers_.size() - 1) % 65535 + 1);
  return {rec, true};
}

void fiber_cache::discard(fiber_record& rec) noexcept {
  std::lock_guard lock(mutex_);
  std::erase_if(fibers_, [&rec](const std::unique_ptr<fiber_record>& f) { return f.get() == &rec; });
}

std::size_t fiber_cache::count() const {
  std::lock_guard lock(mutex_);
  return fibers_.size();
}

}  // namespace promptly::detail
