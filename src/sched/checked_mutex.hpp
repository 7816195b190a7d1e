// A mutex that, in builds with assertions (the Debug/ASan build), knows
// which thread holds it, so that functions named *_locked can assert that
// their caller holds the lock. Without assertions it is a std::mutex.
//
// Invariant (assertion builds): owner_ is the id of the thread between its
// lock()/try_lock() and its unlock(), and the default id otherwise.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace promptly::detail {

class checked_mutex {
 public:
  void lock() {
    mutex_.lock();
    note_owner(std::this_thread::get_id());
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    note_owner(std::this_thread::get_id());
    return true;
  }
  void unlock() {
    note_owner(std::thread::id{});
    mutex_.unlock();
  }
  // True if the calling thread holds the lock (always true without assertions).
  bool held_by_caller() const noexcept {
#ifndef NDEBUG
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();  // relaxed: only the owner wrote its own id
#else
    return true;
#endif
  }

 private:
  void note_owner([[maybe_unused]] std::thread::id id) noexcept {
#ifndef NDEBUG
    owner_.store(id, std::memory_order_relaxed);  // relaxed: read back only by the same thread
#endif
  }
  std::mutex mutex_;
#ifndef NDEBUG
  std::atomic<std::thread::id> owner_{};
#endif
};

}  // namespace promptly::detail
