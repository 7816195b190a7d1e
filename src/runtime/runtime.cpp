// promptly::runtime: the public face of the scheduler.
#include "promptly/runtime.hpp"

#include "../io/backend.hpp"
#include "../sched/scheduler.hpp"
#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "promptly/default_runtime.hpp"
#include "promptly/errors.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/parallel.hpp"
#include "promptly/typed/inversion_detector.hpp"

namespace promptly {

runtime::runtime(runtime_config cfg)
    : sched_(std::make_unique<detail::scheduler>(std::move(cfg))),
      detector_(detail::inversion_detector::attach(sched_->config().detect_inversions, sched_.get())) {
  io::detail::request_backend(sched_->config().io_backend);  // validated by the scheduler's constructor
  io::detail::request_worker_poll_us(sched_->config().io_worker_poll_us);
}

runtime::~runtime() { sched_->shutdown(); }

void runtime::shutdown() { sched_->shutdown(); }

unsigned runtime::workers() const noexcept { return sched_->worker_count(); }

const runtime_config& runtime::config() const noexcept { return sched_->config(); }

void runtime::set_policy(const std::string& name) { sched_->set_policy(name); }

void runtime::set_policy(std::unique_ptr<ext::policy> policy) { sched_->set_policy(std::move(policy)); }

std::string runtime::policy() const { return sched_->policy_name(); }

void runtime::set_fairness(std::vector<long long> weights) { sched_->set_fairness(std::move(weights)); }

pool runtime::create_pool(pool_options opts) { return pool(sched_->create_pool(opts)); }

void runtime::remove_pool(pool p) { sched_->remove_pool(p.id); }

void runtime::on_drained(pool p, std::function<void()> fn) { sched_->on_drained(p.id, std::move(fn)); }

void runtime::request_cores(pool p) { sched_->request_cores(p.id); }

void runtime::set_core_limit(unsigned n) { sched_->set_core_limit(n); }

unsigned runtime::core_limit() const noexcept { return sched_->core_limit(); }

std::size_t runtime::pool_count() const noexcept { return sched_->live_pool_count(); }

runtime_stats runtime::stats() const { return sched_->stats(); }

pool_stats runtime::stats(pool p) const { return sched_->stats_of(p.id); }

inversion_stats runtime::inversions() const { return detector_ ? detector_->snapshot() : inversion_stats{}; }

unsigned detail::current_runtime_workers() noexcept {
  const worker_view* w = current_worker();
  return w != nullptr ? w->sched->worker_count() : 1;
}

// ---- the default runtime (default_runtime.hpp) ----

namespace {

// The configuration, until the default runtime starts.
struct default_runtime_setup {
  std::mutex m;
  std::optional<runtime_config> cfg;
  bool started = false;
};
default_runtime_setup& setup() {
  static default_runtime_setup s;
  return s;
}

runtime_config take_default_config() {
  default_runtime_setup& s = setup();
  std::lock_guard lock(s.m);
  s.started = true;
  return s.cfg.value_or(runtime_config{});
}

// Set once the default runtime's destructor began: later calls run sequentially.
constinit std::atomic<bool> default_runtime_gone{false};

// A function-local static built by the first use: whatever the runtime's construction
// initialised (other function-local statics) finished before this object did, so it is
// destroyed after this object at exit and the shutdown below still has it.
struct default_runtime_instance {
  runtime rt;
  default_runtime_instance() : rt(take_default_config()) {}
  ~default_runtime_instance() { default_runtime_gone.store(true, std::memory_order_release); }  // rt shuts down next
};

runtime* running_default_runtime() {
  if (default_runtime_gone.load(std::memory_order_acquire)) return nullptr;
  static default_runtime_instance instance;
  return &instance.rt;
}

thread_local unsigned sequential_depth = 0;

}  // namespace

void default_runtime_config(runtime_config cfg) {
  validate(cfg);
  default_runtime_setup& s = setup();
  std::lock_guard lock(s.m);
  if (s.started) throw std::logic_error("promptly::default_runtime_config: the default runtime has already started");
  s.cfg = std::move(cfg);
}

runtime& default_runtime() {
  runtime* rt = running_default_runtime();
  if (rt == nullptr) throw runtime_stopped("promptly::default_runtime: the default runtime shut down at process exit");
  return *rt;
}

sequential_region::sequential_region() noexcept { ++sequential_depth; }
sequential_region::~sequential_region() { --sequential_depth; }

bool detail::run_on_default_runtime(void (*fn)(void*), void* arg) {
  if (sequential_depth > 0) return false;
  runtime* rt = running_default_runtime();
  if (rt == nullptr) return false;
  rt->run([fn, arg] { fn(arg); });
  return true;
}

bool runtime::on_own_worker() const noexcept { return sched_->owns(detail::reload_current_worker()); }

}  // namespace promptly
