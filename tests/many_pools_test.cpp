// Thousands of live pools under every shipped policy: work in pools
// across the whole table runs, and every decision's view still lists every
// live pool, most urgent
// first, with pools_with_work() exactly its pools with ready work, although
// the policy thread reads again only the pools that may have changed
// (kept_view.cpp, kept_view::refresh).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

namespace {

using namespace std::chrono_literals;
namespace ext = promptly::ext;

// The job server's limit is 4096 pools; one level plus this many created.
constexpr std::size_t pool_count = 4000;

// Runs a shipped policy and checks the view of each of its decisions.
class checking_policy final : public ext::policy {
 public:
  checking_policy(std::unique_ptr<ext::policy> inner, std::size_t live) : inner_(std::move(inner)), live_(live) {}
  std::string_view name() const noexcept override { return inner_->name(); }
  double desire(ext::pool_id p) const noexcept override { return inner_->desire(p); }
  ext::fair_account fairness(ext::pool_id p) const noexcept override { return inner_->fairness(p); }
  bool switches_only_when_out_of_work() const noexcept override { return inner_->switches_only_when_out_of_work(); }
  bool ticks_while_one_pool_is_busy() const noexcept override { return inner_->ticks_while_one_pool_is_busy(); }
  bool wants_backlog_events() const noexcept override { return inner_->wants_backlog_events(); }

  void on_event(const ext::event& ev, ext::decision& d) override {
    check(d);
    inner_->on_event(ev, d);
  }

  std::string problem() const {
    std::lock_guard lock(mutex_);
    return problem_;
  }
  long decisions() const { return decisions_.load(); }

 private:
  // Every decision: the pool count and pools_with_work() against find();
  // every eighth (a walk of 4000 views per decision would be most of the
  // test under a sanitizer): the order and pools_with_work() against the
  // whole view.
  void check(const ext::decision& d) {
    const long n = decisions_.fetch_add(1);
    const auto pools = d.pools();
    std::string bad;
    if (pools.size() != live_) bad = "the view lists " + std::to_string(pools.size()) + " pools of " + std::to_string(live_);
    for (const ext::pool_view& v : d.pools_with_work()) {
      const ext::pool_view* listed = d.find(v.id);
      if (listed == nullptr || !listed->has_ready_work || !v.has_ready_work)
        bad = "pools_with_work() lists pool " + std::to_string(v.id) + ", which the view shows without work";
    }
    if (n % 8 != 0) {
      record(bad);
      return;
    }
    std::vector<ext::pool_id> with_work;
    for (std::size_t i = 0; i < pools.size(); ++i) {
      if (i > 0 && pools[i - 1].rank > pools[i].rank) bad = "the view is not most urgent first at " + std::to_string(i);
      if (pools[i].has_ready_work) with_work.push_back(pools[i].id);
    }
    for (const std::size_t i : {std::size_t{0}, pools.size() / 2, pools.size() - 1})
      if (i < pools.size() && d.find(pools[i].id) != &pools[i]) bad = "find(" + std::to_string(pools[i].id) + ") is not its view";
    const auto busy = d.pools_with_work();
    bool same = busy.size() == with_work.size();
    for (std::size_t i = 0; same && i < busy.size(); ++i) same = busy[i].id == with_work[i] && busy[i].has_ready_work;
    if (!same)
      bad = "pools_with_work() lists " + std::to_string(busy.size()) + " pools, the view " +
            std::to_string(with_work.size()) + " with ready work";
    record(bad);
  }

  void record(const std::string& bad) {
    if (bad.empty()) return;
    std::lock_guard lock(mutex_);
    if (problem_.empty()) problem_ = bad;
  }

  std::unique_ptr<ext::policy> inner_;
  std::size_t live_;
  std::atomic<long> decisions_{0};
  mutable std::mutex mutex_;
  std::string problem_;
};

class ManyPools : public ::testing::TestWithParam<std::string> {};

TEST_P(ManyPools, EveryPoolsTaskRunsAndEveryViewListsEveryPool) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.levels = 1;
  cfg.policy = "prompt";
  promptly::runtime rt{cfg};
  std::vector<promptly::pool> pools{promptly::pool{0}};
  // Three ranks after the level: ties in rank keep creation order.
  for (std::size_t i = 1; i < pool_count; ++i) pools.push_back(rt.create_pool({.rank = 1 + static_cast<unsigned>(i % 3)}));
  auto owned = std::make_unique<checking_policy>(ext::make_policy(GetParam()), pool_count);
  checking_policy& policy = *owned;
  rt.set_policy(std::move(owned));
  watchdog guard(60s, "4000 pools under " + GetParam(), [&] { return "decisions: " + std::to_string(policy.decisions()); });

  // One task in every `stride`-th pool (every rank, old and new pools), in
  // waves of `wave` at once, while the others stay idle: each wave keeps the
  // busy set (what a decision reads) bounded, and the stride the test's
  // decisions (two per task or so) few enough for a shared machine.
  // Under a sanitizer, where a decision costs 10-50x more, a task in every
  // 64th pool: still every rank, old pools and new.
  constexpr std::size_t stride = under_tsan || under_asan ? 64 : 8, wave = 64;
  std::atomic<long> ran{0};
  long expected = 0;
  for (std::size_t first = 0; first < pools.size(); first += stride * wave) {
    std::vector<promptly::future<long>> done;
    for (std::size_t i = first; i < std::min(first + stride * wave, pools.size()); i += stride)
      done.push_back(rt.submit(pools[i], [&ran] { return ran.fetch_add(1) + 1; }));
    expected += static_cast<long>(done.size());
    for (auto& f : done) (void)f.get();
  }
  EXPECT_EQ(ran.load(), expected);

  // Then one at a time into pools idle since: the least urgent, one in the
  // middle, the most urgent. Each is a pool no decision read since its task
  // ran, so only its became_nonempty event can bring it into the view.
  for (const std::size_t i : {pool_count - 1, pool_count / 2, std::size_t{0}, pool_count - 2})
    EXPECT_EQ(rt.submit(pools[i], [] { return 7L; }).get(), 7L) << "pool " << pools[i].id;
  EXPECT_EQ(policy.problem(), "");
}

// Every shipped policy but fair: fair's criterion and credits cover every
// pool, so each of its decisions still reads every pool, once per event of
// the batch (bench/results/core/pools-many/ measures it).
std::vector<std::string> proportional_policies() {
  std::vector<std::string> names = ext::policy_names();
  std::erase(names, "fair");
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, ManyPools, ::testing::ValuesIn(proportional_policies()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
