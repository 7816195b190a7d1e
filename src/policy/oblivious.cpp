// The `oblivious` policy: priorities ignored. Every worker takes ready work
// from any pool (the Cilk-F baseline of seed 000's evaluation).
#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {
namespace {

class oblivious_policy final : public ext::policy {
 public:
  std::string_view name() const noexcept override { return "oblivious"; }
  bool roaming() const noexcept override { return true; }
  void decide(ext::pool_event, std::size_t, std::span<const ext::pool_stats>, unsigned, std::span<unsigned>) override {}
};

}  // namespace

std::unique_ptr<ext::policy> make_oblivious_policy() { return std::make_unique<oblivious_policy>(); }

}  // namespace promptly::policy_impl
