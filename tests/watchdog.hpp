// A hang guard for liveness tests: a scenario that should finish runs under
// a watchdog; if it has not finished within the limit, the watchdog prints
// what hung, calls the dump callback (the runtime's state) and aborts, so a
// hang fails the test instead of blocking CTest until its timeout.
//
// The limit is never the synchronisation of the test (tests wait on
// events); it only bounds how long a broken build takes to report.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

class watchdog {
 public:
  watchdog(std::chrono::seconds limit, std::string what, std::function<std::string()> dump = {})
      : what_(std::move(what)), dump_(std::move(dump)) {
    thread_ = std::thread([this, limit] {
      std::unique_lock lock(mutex_);
      if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
      std::fprintf(stderr, "watchdog: '%s' did not finish within %lld s\n", what_.c_str(),
                   static_cast<long long>(limit.count()));
      if (dump_) std::fprintf(stderr, "%s\n", dump_().c_str());
      std::fflush(stderr);
      std::abort();
    });
  }
  ~watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

 private:
  std::string what_;
  std::function<std::string()> dump_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};
