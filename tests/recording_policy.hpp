// A test policy: one core per pool, whatever happens, and a record of the
// events it heard. A pool's one core is then the only one that takes its
// work, so work that arrives while that core is busy queues, and a core
// whose pool has nothing to do waits.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "promptly/ext/policy.hpp"
#include "promptly/runtime.hpp"

struct one_core_per_pool final : promptly::ext::policy {
  explicit one_core_per_pool(bool wants) : wants_(wants) {}
  std::string_view name() const noexcept override { return "one-core-per-pool"; }
  bool wants_backlog_events() const noexcept override { return wants_; }
  void on_event(const promptly::ext::event& ev, promptly::ext::decision& d) override {
    {
      std::lock_guard lock(m);
      heard.push_back({ev.kind, ev.pool});
    }
    for (const auto& p : d.pools()) d.allot(p.id, 1);
  }
  bool saw(promptly::ext::event_kind k, promptly::ext::pool_id pool) {
    std::lock_guard lock(m);
    for (const auto& e : heard)
      if (e.first == k && e.second == pool) return true;
    return false;
  }
  bool wants_;
  std::mutex m;
  std::vector<std::pair<promptly::ext::event_kind, promptly::ext::pool_id>> heard;
};


// Installs one on `rt` (which owns it) and returns it, to read what it heard.
inline one_core_per_pool* install_one_core_per_pool(promptly::runtime& rt, bool wants_backlog_events) {
  auto owned = std::make_unique<one_core_per_pool>(wants_backlog_events);
  one_core_per_pool* policy = owned.get();
  rt.set_policy(std::move(owned));
  return policy;
}
