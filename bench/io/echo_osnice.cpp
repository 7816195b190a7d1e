// Echo server of suite `io` with plain threads and OS priorities (runtime `os-nice`): the
// compute kernel runs on a pool of --workers std::threads at nice 19; interaction runs on
// nice-0 threads that block in the kernel (one per connection, or one for the terminal), so
// the OS scheduler's priorities, not a runtime's, decide who gets a core when a line arrives.
// fib(n) is split into independent subproblems (largest first, at least 64 per worker),
// claimed through an atomic counter and computed with the serial recursion: the same
// arithmetic as the other runtimes' fib, without a work-stealing runtime.
// Protocol with the driver: echo_server.hpp.
#include <sys/resource.h>
#include <sys/syscall.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "blocking_echo.hpp"
#include "echo_server.hpp"

namespace {

class nice_pool {
public:
    explicit nice_pool(long workers) {
        for (long i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
    }
    ~nice_pool() {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
    }

    long fib(long n) {
        std::vector<long> parts{n};
        const std::size_t want = 64 * threads_.size();
        while (parts.size() < want) {
            auto big = std::max_element(parts.begin(), parts.end());
            if (*big < 2) break;
            long k = *big;
            *big = k - 1;
            parts.push_back(k - 2);
        }
        std::sort(parts.begin(), parts.end(), std::greater<>());
        std::unique_lock lock(mu_);
        parts_ = std::move(parts);
        next_ = 0;
        sum_ = 0;
        busy_ = threads_.size();
        ++job_;
        cv_.notify_all();
        done_cv_.wait(lock, [this] { return busy_ == 0; });
        return sum_.load();
    }

private:
    void work() {
        ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);  // this thread only
        std::uint64_t seen = 0;
        for (;;) {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return stop_ || job_ != seen; });
            if (stop_) return;
            seen = job_;
            lock.unlock();
            for (std::size_t i; (i = next_.fetch_add(1)) < parts_.size();) sum_ += bench::fib_serial(parts_[i]);
            lock.lock();
            if (--busy_ == 0) done_cv_.notify_one();
        }
    }

    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable cv_, done_cv_;
    std::vector<long> parts_;
    std::atomic<std::size_t> next_{0};
    std::atomic<long> sum_{0};
    std::size_t busy_ = 0;
    std::uint64_t job_ = 0;
    bool stop_ = false;
};

}  // namespace

int main(int argc, char** argv) {
    echo::options o = echo::parse(argc, argv);
    if (!o.policy.empty()) bench::args::fail("--policy is a Promptly option");
    nice_pool pool(o.workers);
    auto handle = [](std::string&) {};

    echo::blocking_interactive interactive(o.mode, handle);

    echo::run_phases(o, [&] {
        long m = o.n;
        bench::opaque(m);
        return pool.fib(m);
    });

    interactive.finish();
    std::_Exit(0);  // connection threads may still block in read(); nothing to clean up
}
