// Randomized schedules: seeded perturbations in the sleep protocol, level
// moves, parking and the policy driver (src/sched/chaos.hpp), a policy that
// hands out random assignments every 300 us (counts, ranked sets of pools,
// cores serving every pool, mixed; workers moved at strand boundaries in
// every direction, some left with no level), and policy
// switches through every built-in policy, including oblivious, while two
// outside threads submit random mixes: fork-join, task groups spawning at
// other levels, long future chains, low-level graphs with urgent arrivals,
// parking inside catch handlers, and detached tasks left running at
// shutdown; seeds 0 mod 3: thieves that read a deque just before its
// hand-over empty it (chaos.hpp's stale steals); seeds 1 mod 3: every yield
// of a thief counts as one that lost the CPU (chaos.hpp's costly yields).
// Checks: every task runs exactly once, results are right, nothing hangs (a
// watchdog dumps the workers' states and the seed).
//
// PROMPTLY_STRESS_SEED=<n> runs one chosen seed (to reproduce a failure);
// PROMPTLY_STRESS_ROUNDS=<n> scales the number of operations.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "promptly/ext/policy.hpp"
#include "promptly/promptly.hpp"
#include "sched/chaos.hpp"
#include "runtime_support.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using namespace std::chrono_literals;

namespace {

constexpr unsigned levels = 3;

// Random assignments every quantum and at every event, in three shapes:
// counts per pool (allot), a random ranked set per core, or a mix of cores
// serving every pool, ranked sets and sleeping cores. One random pool with
// work always gets a core (the most urgent of core 0's set, or core 0 serves
// every pool), so the runtime progresses, but pools lose all their cores
// and cores are left with no pool.
class random_policy final : public promptly::ext::policy {
 public:
  explicit random_policy(std::uint64_t seed) : rng_(seed) {}
  std::string_view name() const noexcept override { return "random"; }
  void on_event(const promptly::ext::event& ev, promptly::ext::decision& d) override {
    if (ev.kind == promptly::ext::event_kind::installed) d.set_quantum(300us);
    const auto pools = d.pools();
    std::vector<std::size_t> with_work;
    for (std::size_t p = 0; p < pools.size(); ++p)
      if (pools[p].has_ready_work) with_work.push_back(p);
    const unsigned shape = static_cast<unsigned>(rng_() % 3);
    if (shape == 0) {
      unsigned left = d.core_count();
      std::vector<unsigned> allotment(pools.size(), 0);
      if (!with_work.empty()) {
        allotment[with_work[rng_() % with_work.size()]] = 1;
        --left;
      }
      for (std::size_t p = 0; p < allotment.size() && left > 0; ++p) {
        const unsigned extra = static_cast<unsigned>(rng_() % (left + 1));
        allotment[p] += extra;
        left -= extra;
      }
      for (std::size_t p = 0; p < pools.size(); ++p) d.allot(pools[p].id, allotment[p]);
      return;
    }
    auto random_set = [&](std::optional<std::size_t> first) {
      std::vector<promptly::ext::pool_id> set;
      if (first) set.push_back(pools[*first].id);
      const std::size_t size = 1 + rng_() % std::min<std::size_t>(pools.size(), 3);
      for (std::size_t tries = 0; set.size() < size && tries < 8; ++tries) {
        const promptly::ext::pool_id id = pools[rng_() % pools.size()].id;
        if (std::find(set.begin(), set.end(), id) == set.end()) set.push_back(id);
      }
      return set;
    };
    for (unsigned c = 0; c < d.core_count(); ++c) {
      const bool progress = c == 0;
      const unsigned pick = shape == 1 ? 0 : static_cast<unsigned>(rng_() % 3);
      if (pick == 1 || (progress && with_work.empty() && shape == 2)) {
        d.serve_every_pool(c);
      } else if (pick == 2 && !progress) {
        d.take_core(c);
      } else {
        std::optional<std::size_t> first;
        if (progress && !with_work.empty()) first = with_work[rng_() % with_work.size()];
        d.serve(c, random_set(first));
      }
    }
  }

 private:
  std::mt19937_64 rng_;
};

const char* const operation_names[] = {"fork-join", "task group", "future chain", "graph", "park in catch",
                                       "parallel_for", "detached", "shutdown"};

struct ledger {
  explicit ledger(std::size_t n) : runs(n), kind(n) {}
  std::vector<std::atomic<int>> runs;
  std::vector<unsigned char> kind;  // which operation took the id (operation_names)
  std::atomic<std::size_t> next{0};
  // Reserves `count` consecutive ids for one operation of kind k (both
  // submitting threads take ids, so a block is reserved in one step).
  std::size_t take(unsigned char k, std::size_t count = 1) {
    const std::size_t first = next.fetch_add(count);
    if (first + count > runs.size()) throw std::length_error("stress ledger too small");
    for (std::size_t i = 0; i < count; ++i) kind[first + i] = k;
    return first;
  }
  void ran(std::size_t id) { runs[id].fetch_add(1); }
};

std::string describe(const promptly::runtime& rt, std::uint64_t seed) {
  return "seed " + std::to_string(seed) + " (rerun with PROMPTLY_STRESS_SEED=" + std::to_string(seed) + ")\n" +
         ::describe(rt);
}

// One random operation, submitted from an outside thread and awaited.
void random_operation(promptly::runtime& rt, std::mt19937_64& rng, ledger& book) {
  const auto level = promptly::level{static_cast<unsigned>(rng() % levels)};
  switch (rng() % 7) {
    case 0: {  // fork-join
      const int n = 8 + static_cast<int>(rng() % 8);
      const std::size_t id = book.take(0);
      EXPECT_EQ(rt.submit(level, [&, n, id] {
                    book.ran(id);
                    return fib(n);
                  }).get(),
                fib_serial(n));
      break;
    }
    case 1: {  // a task group spawning at every level, children spawning again
      const std::size_t first = book.take(1, 34);  // the root, children first+1..first+30, spawners first+31..first+33
      rt.submit(level, [&, first] {
          book.ran(first);
          promptly::task_group tg;
          for (unsigned c = 0; c < 3; ++c)
            tg.spawn(promptly::level{c % levels}, [&, first, c] {
              promptly::task_group inner;
              for (unsigned k = 0; k < 10; ++k)
                inner.spawn([&, id = first + 1 + c * 10 + k] { book.ran(id); });
              inner.wait();
              book.ran(first + 31 + c);
            });
          tg.wait();
        }).get();
      break;
    }
    case 2: {  // a chain of futures, each getting its predecessor
      const int length = 50 + static_cast<int>(rng() % 500);
      const std::size_t first = book.take(2, static_cast<std::size_t>(length));
      const long sum = rt.submit(level, [&, first, length] {
        std::vector<promptly::future<long>> chain;
        chain.reserve(static_cast<std::size_t>(length));
        for (int i = 0; i < length; ++i) {
          promptly::future<long> prev = i > 0 ? chain.back() : promptly::future<long>{};
          chain.push_back(promptly::async([&, prev, id = first + static_cast<std::size_t>(i)] {
            book.ran(id);
            return (prev.valid() ? prev.get() : 0L) + 1;
          }));
        }
        return chain.back().get();
      }).get();
      EXPECT_EQ(sum, length);
      break;
    }
    case 3: {  // a graph at the lowest level while urgent tasks arrive
      promptly::graph g("stress");
      std::vector<promptly::graph_task> tasks;
      std::atomic<int> wrong_level{0};
      const std::size_t first = book.take(3, 64);
      for (int i = 0; i < 64; ++i)
        tasks.push_back(g.emplace([&, id = first + static_cast<std::size_t>(i)] {
          if (promptly::current_level() != levels - 1) wrong_level.fetch_add(1);
          book.ran(id);
        }));
      for (int i = 1; i < 64; ++i) tasks[static_cast<std::size_t>((i - 1) / 2)].precede(tasks[static_cast<std::size_t>(i)]);
      auto run = g.run(rt, promptly::level{levels - 1});
      const std::size_t urgent = book.take(3);
      rt.submit(promptly::level{0}, [&, urgent] { book.ran(urgent); }).get();
      run.get();
      EXPECT_EQ(wrong_level.load(), 0) << "graph nodes ran outside the graph's level";
      break;
    }
    case 4: {  // parking inside a catch handler, resuming on any worker
      const std::size_t id = book.take(4, 2);
      const std::size_t helper = id + 1;
      const bool ok = rt.submit(level, [&, id, helper] {
        book.ran(id);
        try {
          throw std::runtime_error("mine " + std::to_string(id));
        } catch (const std::runtime_error&) {
          auto other = promptly::async(promptly::level{static_cast<unsigned>(id % levels)}, [&, helper] {
            book.ran(helper);
            return fib(10);
          });
          if (other.get() != 55) return false;
          try {
            throw;  // the handler's own exception, after the park
          } catch (const std::runtime_error& e) {
            return std::string(e.what()) == "mine " + std::to_string(id);
          }
        }
      }).get();
      EXPECT_TRUE(ok) << "the exception being handled changed across a park";
      break;
    }
    case 5: {  // parallel_for
      const std::size_t first = book.take(5, 200);
      rt.submit(level, [&, first] {
          promptly::parallel_for(0, 200, 3, [&, first](int i) { book.ran(first + static_cast<std::size_t>(i)); });
        }).get();
      break;
    }
    default: {  // detached tasks nobody joins (shutdown must still run them)
      const std::size_t first = book.take(6, 8);
      rt.submit(level, [&, first] {
          for (std::size_t i = 0; i < 8; ++i)
            (void)promptly::async(promptly::level{static_cast<unsigned>(i % levels)}, [&, id = first + i] {
              book.ran(id);
              (void)fib(12);
            });
        }).get();
      break;
    }
  }
}

std::vector<std::uint64_t> seeds() {
  if (const char* s = std::getenv("PROMPTLY_STRESS_SEED")) return {std::strtoull(s, nullptr, 0)};
  return {1, 2, 3, 4};
}

int rounds() {
  if (const char* s = std::getenv("PROMPTLY_STRESS_ROUNDS")) return std::atoi(s);
  return under_tsan ? 40 : 250;
}

}  // namespace

TEST(SchedStress, RandomizedSchedulesRunEveryTaskExactlyOnce) {
  for (const std::uint64_t seed : seeds()) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with PROMPTLY_STRESS_SEED=" + std::to_string(seed) + ")");
    std::fprintf(stderr, "stress seed %llu\n", static_cast<unsigned long long>(seed));
    promptly::detail::chaos::enable(seed);
    // Every third seed, every deque a worker hands over as it leaves a level is emptied at once
    // by a "stale thief" (chaos.hpp): its tasks go to the level's queue and the level's muggable
    // list keeps an empty deque until a worker of the level walks it.
    if (seed % 3 == 0) promptly::detail::chaos::steal_at_hand_overs(-1);
    // Seeds 1 mod 3: every yield of a thief counts as one that lost the CPU, as beside a CPU-bound
    // process (chaos.hpp): each exploration ends at its first yield.
    if (seed % 3 == 1) promptly::detail::chaos::make_yields_costly(-1);
    ledger book(2'000'000);
    {
      promptly::runtime_config cfg;
      cfg.workers = 2 + static_cast<unsigned>(seed % 2);
      cfg.levels = levels;
      cfg.policy = "aps";
      promptly::runtime rt(cfg);
      watchdog guard(300s, "stress seed " + std::to_string(seed), [&] { return describe(rt, seed); });
      std::atomic<int> submitters_left{2};
      std::thread switcher([&] {
        std::mt19937_64 rng(seed * 7919);
        const char* names[] = {"oblivious", "prompt", "aps", "fair"};
        while (submitters_left.load() > 0) {
          if (rng() % 5 == 0)
            rt.set_policy(std::make_unique<random_policy>(rng()));
          else
            rt.set_policy(names[rng() % 4]);
          for (int spin = 0; spin < 20 && submitters_left.load() > 0; ++spin) std::this_thread::yield();
        }
      });
      std::vector<std::thread> submitters;
      for (int t = 0; t < 2; ++t)
        submitters.emplace_back([&, t] {
          std::mt19937_64 rng(seed * 31 + static_cast<std::uint64_t>(t));
          for (int i = 0; i < rounds(); ++i) random_operation(rt, rng, book);
          submitters_left.fetch_sub(1);
        });
      for (auto& s : submitters) s.join();
      switcher.join();
      // Leave detached work running and shut down under load.
      for (int i = 0; i < 20; ++i) {
        const std::size_t id = book.take(7);
        (void)rt.submit(promptly::level{static_cast<unsigned>(i % levels)}, [&, id] {
          (void)fib(14);
          book.ran(id);
        });
      }
    }  // the destructor waits for every accepted task
    promptly::detail::chaos::enable(0);
    promptly::detail::chaos::steal_at_hand_overs(0);
    promptly::detail::chaos::make_yields_costly(0);
    const std::size_t used = book.next.load();
    std::size_t wrong = 0;
    for (std::size_t id = 0; id < used; ++id)
      if (book.runs[id].load() != 1) {
        if (++wrong <= 5)
          ADD_FAILURE() << "task " << id << " (" << operation_names[book.kind[id]] << ") ran " << book.runs[id].load()
                        << " times";
      }
    EXPECT_EQ(wrong, 0u) << "of " << used << " tasks";
    std::fprintf(stderr, "stress seed %llu: %zu tasks, each ran once: %s\n", static_cast<unsigned long long>(seed), used,
                 wrong == 0 ? "yes" : "no");
  }
}
