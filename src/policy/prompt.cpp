// The `prompt` policy: winner takes all. Every core serves the most urgent
// pool that has ready work (the prompt principle of Muller et al., as
// stated in I-Cilk, Sec. 1). Purely event-driven: no quantum. Within that
// pool cores are greedy; they do not run less urgent work while the top
// pool has work, even if it has too little parallelism for all of them
// (that trade-off is what `aps` and `fair` exist for).
#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {
namespace {

class prompt_policy final : public ext::policy {
 public:
  std::string_view name() const noexcept override { return "prompt"; }
  // Work of the most urgent pool waiting behind strands of less urgent ones is what
  // preemption exists for (src/sched/README.md, "Preemption").
  bool wants_strand_events() const noexcept override { return true; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::waiting_behind_strands) {
      d.preempt(ev.pool);  // the cores stay allotted as they are: only the strands are in the way
      return;
    }
    // The most urgent pool with work heads pools_with_work(): no walk over
    // the idle pools (docs/policies.md, "Decision cost").
    const auto busy = d.pools_with_work();
    const auto pools = d.pools();
    if (pools.empty()) return;
    const ext::pool_view& top = busy.empty() ? pools[0] : busy[0];  // nothing anywhere: every core waits at the most urgent pool
    d.allot(top.id, d.core_count());
  }
};

}  // namespace

std::unique_ptr<ext::policy> make_prompt_policy() { return std::make_unique<prompt_policy>(); }

}  // namespace promptly::policy_impl
