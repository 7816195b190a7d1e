// promptlyd's Prometheus text exposition (format 0.0.4) and health
// answers (docs/server.md, "Metrics"). Built from one job_server::stats()
// snapshot plus the protocol service's counters, so the numbers of one
// scrape are consistent with each other (AMCilk Sec. 4.1: runtime
// information is updated as a whole, never key by key).
#pragma once

#include <string>

#include "server/protocol/service.hpp"

namespace promptly::server::daemon {

[[nodiscard]] std::string render_metrics(protocol::service& svc, unsigned workers);

// /readyz: ready unless draining or a submit would be rejected now; the
// reason when not ready.
struct readiness {
  bool ready = false;
  std::string reason;
};
[[nodiscard]] readiness check_ready(protocol::service& svc);

}  // namespace promptly::server::daemon
