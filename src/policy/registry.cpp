// Policies by name.
#include <stdexcept>
#include <string>

#include "job_policies.hpp"
#include "serpt.hpp"
#include "promptly/ext/policy.hpp"

namespace promptly::policy_impl {
std::unique_ptr<ext::policy> make_aps_policy(const ext::aps_params& p);
std::unique_ptr<ext::policy> make_prompt_policy();
std::unique_ptr<ext::policy> make_oblivious_policy();
std::unique_ptr<ext::policy> make_fair_policy(const ext::fair_params& p);
}  // namespace promptly::policy_impl

namespace promptly::ext {

// The job policies (equi .. elastic) are the job server's core allocation
// between jobs (docs/job-policies.md); any runtime may use them.
std::vector<std::string> policy_names() {
  return {"oblivious", "prompt", "aps", "fair", "equi", "drep", "drep-steal-boundary", "asteal", "elastic", "serpt"};
}

std::unique_ptr<policy> make_policy(std::string_view name, const aps_params& aps, const fair_params& fair) {
  if (name == "oblivious") return policy_impl::make_oblivious_policy();
  if (name == "prompt") return policy_impl::make_prompt_policy();
  if (name == "aps") {
    if (!(aps.delta > 0 && aps.delta <= 1))
      throw std::invalid_argument("promptly: aps delta = " + std::to_string(aps.delta) + " must be in (0, 1]");
    if (!(aps.rho > 1)) throw std::invalid_argument("promptly: aps rho = " + std::to_string(aps.rho) + " must be > 1");
    if (aps.quantum.count() <= 0) throw std::invalid_argument("promptly: aps quantum must be > 0");
    return policy_impl::make_aps_policy(aps);
  }
  if (name == "fair") {
    if (fair.round.count() <= 0) throw std::invalid_argument("promptly: fair round must be > 0");
    return policy_impl::make_fair_policy(fair);
  }
  if (name == "equi") return policy_impl::make_equi_policy();
  if (name == "drep") return policy_impl::make_drep_policy();
  if (name == "drep-steal-boundary") return policy_impl::make_drep_steal_boundary_policy();
  if (name == "asteal") return policy_impl::make_asteal_policy();
  if (name == "elastic") return policy_impl::make_elastic_policy();
  // By name without a size board: every job has the prior size, so the rank
  // is by work done (the job server and the simulator pass their board).
  if (name == "serpt") return policy_impl::make_serpt_policy();
  throw std::invalid_argument("promptly: unknown policy '" + std::string(name) +
                              "' (expected oblivious, prompt, aps, fair, equi, drep, drep-steal-boundary, asteal "
                              "or elastic)");
}

}  // namespace promptly::ext
