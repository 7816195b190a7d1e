// The `oblivious` policy: priorities ignored. Every core takes ready work
// from any pool (the Cilk-F baseline of I-Cilk's evaluation, Sec. 6).
#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {
namespace {

class oblivious_policy final : public ext::policy {
 public:
  std::string_view name() const noexcept override { return "oblivious"; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind != ext::event_kind::installed) return;  // the cores keep serving every pool
    for (unsigned c = 0; c < d.core_count(); ++c) d.serve_every_pool(c);
  }
};

}  // namespace

std::unique_ptr<ext::policy> make_oblivious_policy() { return std::make_unique<oblivious_policy>(); }

}  // namespace promptly::policy_impl
