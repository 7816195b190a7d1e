// The `prompt` policy: winner takes all. Every worker serves the most
// urgent pool that has ready work (Muller et al.'s prompt principle as
// stated in seed 000 Sec. 1). Purely event-driven: no quantum. Within that
// pool workers are greedy; they do not run lower-priority work while the
// top pool is non-empty, even if it has too little parallelism for all of
// them (that trade-off is what `aps` and `fair` exist for).
#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {
namespace {

class prompt_policy final : public ext::policy {
 public:
  std::string_view name() const noexcept override { return "prompt"; }
  void decide(ext::pool_event, std::size_t, std::span<const ext::pool_stats> stats, unsigned workers,
              std::span<unsigned> allotment) override {
    for (auto& a : allotment) a = 0;
    for (std::size_t l = 0; l < stats.size(); ++l)
      if (stats[l].has_ready_work) {
        allotment[l] = workers;
        return;
      }
    // Nothing anywhere: keep everyone at the most urgent pool, asleep.
    if (!allotment.empty()) allotment[0] = workers;
  }
};

}  // namespace

std::unique_ptr<ext::policy> make_prompt_policy() { return std::make_unique<prompt_policy>(); }

}  // namespace promptly::policy_impl
