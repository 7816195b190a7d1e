// The `equi` policy: equal partition (the CFS-like baseline of AMCilk
// Sec. 6.3's "Eql-partition"). The pools with ready work of the most urgent
// class split every core evenly; the cores left after the even part go one
// each to the oldest of them. There is no cap: a pool alone gets every core,
// so a class with work takes all cores and the next class waits (the class
// rule of job_classes.hpp). Re-evaluated on every pool event (added,
// removed, non-empty, empty); the counts change only then. Quantum ticks
// (held_core_quantum) only find cores held by another pool's strand and
// give the pool they were assigned a core free to move (job_classes.hpp,
// "Held cores"). With more pools than cores the oldest get one core each
// and the newest wait for a pool to finish.
//
// Invariants
//  * Stateless: a decision depends only on its view (pools and cores).
//  * Every core goes to a pool with work whenever one exists.
#include <vector>

#include "job_classes.hpp"
#include "job_policies.hpp"

namespace promptly::policy_impl {
namespace {

class equi_policy final : public ext::policy {
 public:
  std::string_view name() const noexcept override { return "equi"; }
  void on_event(const ext::event& ev, ext::decision& d) override {
    if (ev.kind == ext::event_kind::installed) d.set_quantum(held_core_quantum);
    if (tick_without_held_cores(ev, d)) return;  // the shares change only at pool events
    const auto pools = d.pools_with_work();  // a pool without work gets no core (job_classes.hpp)
    const std::vector<unsigned> counts = serve_by_rank(
        pools, d.core_count(),
        [](std::span<const std::size_t> members, unsigned left) { return equal_split(members.size(), left); });
    allot_counts(d, pools, counts);
  }
};

}  // namespace

std::unique_ptr<ext::policy> make_equi_policy() { return std::make_unique<equi_policy>(); }

}  // namespace promptly::policy_impl
