// promptly::runtime: the public face of the scheduler.
#include "promptly/runtime.hpp"

#include "../io/backend.hpp"
#include "../sched/scheduler.hpp"
#include "promptly/ext/policy.hpp"
#include "promptly/typed/inversion_detector.hpp"

namespace promptly {

runtime::runtime(runtime_config cfg)
    : sched_(std::make_unique<detail::scheduler>(std::move(cfg))),
      detector_(detail::inversion_detector::attach(sched_->config().detect_inversions, sched_.get())) {
  io::detail::request_backend(sched_->config().io_backend);  // validated by the scheduler's constructor
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

inversion_stats runtime::inversions() const { return detector_ ? detector_->snapshot() : inversion_stats{}; }

bool runtime::on_own_worker() const noexcept { return sched_->owns(detail::reload_current_worker()); }

}  // namespace promptly
