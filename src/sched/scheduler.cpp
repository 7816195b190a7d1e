// Scheduler construction, worker threads, submission and shutdown.
#include "scheduler.hpp"

#include <pthread.h>
#include <sched.h>

#include <cassert>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "chaos.hpp"
#include "os_time_slice.hpp"
#include "toolchain.hpp"
#include "promptly/errors.hpp"

namespace promptly::detail {

constinit thread_local worker_view* tls_worker = nullptr;

PROMPTLY_NEVER_INLINE worker_view* reload_current_worker() noexcept { return tls_worker; }

std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

namespace {

std::vector<int> affinity_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// The configuration with its defaults filled in from the machine and the
// environment; throws std::invalid_argument naming a bad field.
runtime_config resolved(runtime_config cfg) {
  validate(cfg);
  cfg.os_time_slice = resolve_os_time_slice(cfg.os_time_slice);  // the environment's, if the field is 0
  if (cfg.workers == 0) cfg.workers = default_worker_count();
  if (cfg.steal_bound == 0) cfg.steal_bound = 2 * (cfg.workers + 1);  // Taskflow's executor, Sec. III
  return cfg;
}

}  // namespace

namespace {
// The standby threads of preemption (preemption.cpp) come after the cores.
unsigned standby_threads(const runtime_config& cfg) { return cfg.preemption.enabled ? cfg.preemption.standby_threads : 0; }
}  // namespace

scheduler::scheduler(runtime_config cfg)
    : cfg_(resolved(std::move(cfg))),
      pools_(cfg_.workers + standby_threads(cfg_)),
      board_(pools_, workers_, cfg_.workers, standby_threads(cfg_)),
      driver_(cfg_, pools_, workers_, board_, standby_threads(cfg_), stopping_),
      loop_(*this, cfg_, workers_, sleep_, pools_, moves_, board_, driver_, stopping_) {
  const unsigned all = cfg_.workers + standby_threads(cfg_);
  workers_.reserve(all);
  for (unsigned i = 0; i < all; ++i) {
    auto w = std::make_unique<worker>();
    w->index = i;
    w->standby = i >= cfg_.workers;
    // A standby stands by with no pool: no wake-up for work is aimed at it (sleep_protocol).
    if (w->standby) w->assigned.store(no_pool, std::memory_order_relaxed);  // no other thread exists yet
    w->sched = this;
    w->slab = w->slab_owner.get();
    w->rng_state = 0x9E3779B97F4A7C15ULL * (i + 1);
    w->pool = 0;
    w->phase_since_ns.store(now_ns(), std::memory_order_relaxed);
    workers_.push_back(std::move(w));
  }
  // The levels: pools 0..L-1 with rank = level, never removed.
  for (unsigned l = 0; l < cfg_.levels; ++l) {
    std::lock_guard lock(pools_.mutex());
    pool_record& p = pools_.open_locked();
    assert(p.id == l && "the levels are pools 0..L-1");
    p.rank = l;
    p.weight = level_weight(cfg_.fair.weights, l);
    p.created_ns = now_ns();
    p.fixed = true;
    p.phase.store(pool_phase::live, std::memory_order_relaxed);  // no other thread exists yet
  }
  for (auto& w : workers_) {
    w->at = &pool_at(0);
    w->deque = moves_.own_deque(*w, *w->at);
    w->visible.store(w->deque, std::memory_order_relaxed);
  }
  // Each worker's first fiber is made here, so that a stack that cannot be
  // mapped is an exception from the constructor, not a terminate in a thread.
  for (auto& w : workers_) w->current = &take_idle_fiber(*w);
  driver_.start_clock(cfg_.allotment_trace);
  start_trace();
  chaos::enable_from_environment();
  set_policy(cfg_.policy);  // initial allotment
  driver_.start();
  const std::vector<int> cpus = cfg_.pin_workers ? affinity_cpus() : std::vector<int>{};
  for (auto& w : workers_) {
    worker* wp = w.get();
    wp->thread = std::thread([this, wp] { worker_main(*wp); });
    pthread_setname_np(wp->thread.native_handle(), (wp->standby ? "promptly-s" + std::to_string(wp->index - cfg_.workers)
                                                                 : "promptly-w" + std::to_string(wp->index))
                                                                    .c_str());
    if (!cpus.empty() && !wp->standby) {
      const int cpu = cpus[wp->index % cpus.size()];
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      // Recorded for stats() (worker_state::cpu) only if the pinning took.
      if (pthread_setaffinity_np(wp->thread.native_handle(), sizeof(set), &set) == 0) wp->cpu = cpu;
    }
  }
}

// The event trace (event_trace.hpp): runtime_config::trace_file, else
// PROMPTLY_TRACE. The file is opened (and truncated) now, so that a path
// that cannot be written is an error from the constructor, not a lost trace.
void scheduler::start_trace() {
  trace_path_ = cfg_.trace_file;
  if (trace_path_.empty())
    if (const char* env = std::getenv("PROMPTLY_TRACE"); env != nullptr) trace_path_ = env;
  if (trace_path_.empty()) return;
  if (!std::ofstream(trace_path_, std::ios::trunc))
    throw std::invalid_argument("promptly: cannot open trace_file '" + trace_path_ + "'");
  constexpr std::size_t kept = 65536;  // events per thread (24 B each)
  for (auto& w : workers_) w->trace = trace_ring(kept);
  driver_.start_trace(kept);
  external_trace_ = trace_ring(kept);
  for (auto& w : workers_) w->tracing = true;  // inline spawn sites read it (worker_view.hpp)
  trace_t0_ns_ = now_ns();
  tracing_ = true;
}

void scheduler::trace_external(trace_kind kind, std::uint32_t pool, std::uint32_t arg, std::uint32_t arg2) noexcept {
  // A spin lock, not a mutex: the callers are the noexcept make-ready and
  // wake paths, and the critical section is one store into the ring.
  while (external_trace_lock_.test_and_set(std::memory_order_acquire)) {  // acquire: the previous recorder's store
  }
  external_trace_.record(kind, now_ns(), pool, arg, arg2);
  external_trace_lock_.clear(std::memory_order_release);  // release: for the next recorder and the writer
}

void scheduler::trace_ready(const worker_view* w, trace_kind kind, std::uint32_t pool, std::uint32_t what) noexcept {
  if (owns(w)) {
    worker& self = worker::of(*const_cast<worker_view*>(w));
    self.trace.record(kind, now_ns(), pool, trace_id(self.current), what);
  } else {
    trace_external(kind == trace_kind::spawn ? trace_kind::submit : kind, pool, 0, what);
  }
}

void scheduler::write_trace() noexcept {
  if (!tracing_) return;
  try {
    std::vector<const trace_ring*> rings;
    for (auto& w : workers_) rings.push_back(&w->trace);
    while (external_trace_lock_.test_and_set(std::memory_order_acquire)) {  // acquire: the last recorder's writes
    }
    write_chrome_trace(trace_path_, rings, worker_count(), driver_.trace(), external_trace_, trace_t0_ns_);
    external_trace_lock_.clear(std::memory_order_release);
  } catch (const std::exception& e) {  // a destructor must not throw: say it
    std::fprintf(stderr, "%s\n", e.what());
  }
}

scheduler::~scheduler() {
  shutdown();
  // A waker from another thread may still be leaving inject (pools.cpp,
  // foreign_injection); the window is a few instructions, so yield.
  while (foreign_injectors_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
}

void scheduler::shutdown() {
  std::call_once(shutdown_once_, [this] {
    if (owns(reload_current_worker())) {
      std::fputs("promptly: a runtime was destroyed or shut down from one of its own tasks\n", stderr);
      std::abort();
    }
    accepting_.store(false, std::memory_order_seq_cst);
    // Every accepted task finishes before the workers stop (no silent loss).
    while (outstanding_.load(std::memory_order_seq_cst) != 0)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    driver_.stop();  // stores stopping_ under the policy lock, joins the policy thread
    notifier::fence_before_notify();
    for (auto& w : workers_) notifier::notify(w->slot);
    for (auto& w : workers_) w->thread.join();
    pools_.assert_queued_index_covers();  // nothing runs now (pool_table.hpp)
    write_trace();  // every thread that records has stopped
    pools_.run_leftover_drain_notices();
    for (auto& w : workers_) slab_allocator::retire(std::move(w->slab_owner));
  });
}

fiber_record& scheduler::take_idle_fiber(worker& w) {
  if (fiber_record* f = fiber_cache::take_own_idle(w)) return *f;
  if (chaos::fiber_creation_fails()) throw std::bad_alloc();
  const fiber_cache::taken got = fibers_.take_spare_or_make();
  if (!got.fresh) return *got.fiber;
  fiber_record* rec = got.fiber;
  try {
    start_fiber(*rec, cfg_.fiber_stack_bytes, [this, rec] {
      loop_.run();
      // The loop ended (shutdown): return to the thread's main context.
      worker& self = worker::of(*reload_current_worker());
      self.exited = rec;
      announce_switch(self.main_fiber);
      return std::move(self.main_fiber.context);
    });
  } catch (...) {
    fibers_.discard(*rec);
    throw;
  }
  return *rec;
}

fiber_record* scheduler::try_take_idle_fiber(worker& w) noexcept {
  try {
    return &take_idle_fiber(w);
  } catch (...) {
    static std::once_flag warned;
    std::call_once(warned, [this] {
      const std::size_t fibers = fibers_.count();
      std::fprintf(stderr,
                   "promptly: cannot map another fiber stack (%zu fibers of %zu KiB exist; the limit is "
                   "vm.max_map_count, about two mappings per fiber, or the address-space limit): waiting tasks "
                   "now block their worker thread until their event; raise vm.max_map_count or wait on fewer "
                   "things at once\n",
                   fibers, cfg_.fiber_stack_bytes / 1024);
    });
    return nullptr;
  }
}

void scheduler::worker_main(worker& w) {
  tls_worker = &w;
  // Relaxed: a statistic (stats()).
  // A standby asks for the shortest slice: woken beside a strand, it then gets the CPU at once
  // (EEVDF: its virtual deadline is the earliest), and shares it finely while both run.
  w.os_time_slice_us.store(request_os_time_slice(w.standby ? min_os_time_slice : cfg_.os_time_slice).count(),
                           std::memory_order_relaxed);
  const fiber_overflow_guard overflow_guard;  // names fiber stack overflows on this thread (fiber_stack.hpp)
  w.main_fiber.tsan_fiber = tsan_current_fiber();
  auto finish_exited = [&w] {
    if (w.exited != nullptr) destroy_fiber_annotation(*w.exited);
    w.exited = nullptr;
  };
  fiber_record& first = *w.current;  // made by the constructor
  switch_fiber(w.main_fiber, first, [] {});
  finish_exited();
  // Wake every pooled fiber so that each leaves its loop and ends: this
  // worker's, then any left in the shared spares (every worker helps).
  for (;;) {
    fiber_record* f = fiber_cache::take_own_idle(w);
    if (f == nullptr) f = fibers_.take_spare();
    if (f == nullptr) break;
    w.current = f;
    switch_fiber(w.main_fiber, *f, [] {});
    finish_exited();
  }
  tls_worker = nullptr;
}

}  // namespace promptly::detail
