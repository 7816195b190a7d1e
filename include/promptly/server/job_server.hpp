// The embedded multiprogrammed job server: many parallel jobs at once on one
// runtime, each job a pool of its own (AMCilk, "Multiprogramming with
// Cilk-style work stealing", Sec. 3-4). Programs are registered by name with
// an argument schema; clients submit (program, args) from any thread, and get
// a handle to wait for, query or cancel the job. promptlyd (docs/server.md)
// is this class behind a socket.
//
//   promptly::runtime rt;
//   promptly::server::job_server srv(rt);
//   srv.register_program("fib", fib_job, promptly::server::arg_schema{}.integer("n", {.min = 0, .max = 60}));
//   auto job = srv.submit("fib", {{"n", 30}});
//   promptly::server::job_info done = job.wait();   // done.result == 832040
//
// Guarantees: every accepted job reaches exactly one terminal state (done,
// failed, cancelled); a submission that cannot be accepted throws
// server::error with code rejected (never silent loss); a job that throws
// fails alone; finished jobs stay queryable by id for `result_ttl`.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "promptly/future.hpp"
#include "promptly/pool.hpp"

namespace promptly {
class runtime;
}

namespace promptly::server {

using json = nlohmann::json;
using job_id = std::uint64_t;

// The protocol's error codes (docs/server.md, "Errors").
enum class error_code { bad_request, unknown_op, unknown_program, bad_args, unknown_job, rejected, not_allowed };
std::string_view to_string(error_code c) noexcept;

// Every error the job server reports to a caller; code() is what the
// protocol sends as {"ok":false,"error":{"code":...,"message":what()}}.
class error : public std::runtime_error {
 public:
  error(error_code c, const std::string& message) : std::runtime_error(message), code_(c) {}
  [[nodiscard]] error_code code() const noexcept { return code_; }

 private:
  error_code code_;
};

enum class job_state { queued, running, done, failed, cancelled, rejected };
std::string_view to_string(job_state s) noexcept;
[[nodiscard]] constexpr bool is_terminal(job_state s) noexcept {
  return s == job_state::done || s == job_state::failed || s == job_state::cancelled || s == job_state::rejected;
}

// The rules of one argument of an arg_schema (defined outside the class so
// their default member initializers can serve as default arguments).
// Every member has a default initializer, so designated initializers may
// leave any of them out without -Wmissing-field-initializers warnings.
struct integer_rule {
  std::optional<std::int64_t> min{}, max{}, default_value{};
  std::string help{};
  bool power_of_two = false;  // the value must be 2^k (k >= 0)
};
struct number_rule {
  std::optional<double> min{}, max{}, default_value{};
  std::string help{};
};
struct string_rule {
  std::size_t max_length = 4096;
  std::vector<std::string> one_of{};  // empty = any string
  std::optional<std::string> default_value{};
  std::string help{};
};
struct boolean_rule {
  std::optional<bool> default_value{};
  std::string help{};
};
// A program's arguments: named, typed, bounded, with defaults. submit()
// checks a request's args against it before anything runs (bad_args names
// the argument and the rule it broke; unknown arguments are refused).
class arg_schema {
 public:
  using integer_rule = server::integer_rule;
  using number_rule = server::number_rule;
  using string_rule = server::string_rule;
  using boolean_rule = server::boolean_rule;

  // An argument without a default is required.
  arg_schema& integer(std::string name, integer_rule rule = {});
  arg_schema& number(std::string name, number_rule rule = {});
  arg_schema& string(std::string name, string_rule rule = {});
  arg_schema& boolean(std::string name, boolean_rule rule = {});

  // The args with defaults filled in; throws error{bad_args} otherwise.
  [[nodiscard]] json validate(const json& args) const;
  // The schema as JSON (for `promptly programs` and docs).
  [[nodiscard]] json describe() const;

 private:
  struct rule;
  std::vector<std::shared_ptr<const rule>> rules_;
};

// What a running job sees: its validated args, its pool, cooperative cancel.
//
// Cancellation (job_server::cancel, drain's deadline) sets cancelled() and
// requests the job's stop token. A program stops at its cancellation
// points: throw_if_cancelled() at its cutoffs, and the waits below, which
// park the job's fiber (its worker runs other work) and wake with
// job_cancelled as soon as the job is cancelled; io:: operations given
// stop_token() complete with io::cancelled. A job parked anywhere else (a
// plain future::get, io::sleep_for without the token) stays running until
// that wait ends on its own.
class job_context {
 public:
  [[nodiscard]] const json& args() const noexcept;
  [[nodiscard]] job_id id() const noexcept;
  [[nodiscard]] promptly::pool pool() const noexcept;
  [[nodiscard]] promptly::runtime& runtime() const noexcept;
  // True once the job was cancelled; long programs poll it at their cutoffs.
  [[nodiscard]] bool cancelled() const noexcept;
  // Throws job_cancelled if cancelled() (the job then ends as cancelled).
  void throw_if_cancelled() const;
  // Requested when the job is cancelled: for io:: operations
  // (io::read(fd, buf, deadline, ctx.stop_token())) and std::stop_callback.
  [[nodiscard]] std::stop_token stop_token() const noexcept;

  // Sleeps d on the runtime's I/O timers (io::sleep_for); throws
  // job_cancelled when the job is cancelled before or during the sleep.
  void sleep_for(std::chrono::nanoseconds d) const;
  // f.get(), parking until f is ready; throws job_cancelled if the job is
  // cancelled first (f's task runs on; it is not run inline, as get() may).
  template <class T>
  decltype(auto) wait(const promptly::future<T>& f) const {
    if (park_until(promptly::detail::future_access::state(f), nullptr) == wake_reason::cancelled) throw_cancelled();
    return f.get();
  }
  // As wait, for at most d: true if f is ready (f.get() will not wait),
  // false if d passed first. Each call that parks leaves a small record
  // (tens of bytes) on f until f completes.
  template <class T>
  [[nodiscard]] bool wait_for(const promptly::future<T>& f, std::chrono::nanoseconds d) const {
    using clock = std::chrono::steady_clock;
    const auto now = clock::now();
    const auto deadline = d >= clock::time_point::max() - now ? clock::time_point::max() : now + d;  // no overflow
    const wake_reason w = park_until(promptly::detail::future_access::state(f), &deadline);
    if (w == wake_reason::cancelled) throw_cancelled();
    return w == wake_reason::ready;
  }

  struct impl;
  explicit job_context(impl* i) noexcept : impl_(i) {}

 private:
  enum class wake_reason { ready, cancelled, timed_out };
  // Parks until s is ready, the job is cancelled or *deadline (if given)
  // passes; a null s (an empty future) is "ready": get() then throws future_empty.
  wake_reason park_until(promptly::detail::future_state_base* s, const std::chrono::steady_clock::time_point* deadline) const;
  [[noreturn]] void throw_cancelled() const;
  impl* impl_;
};

// Thrown by job_context::throw_if_cancelled.
class job_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A program: runs as the job's root task in the job's pool (it may fork,
// use futures and task groups; all of it stays in the pool) and returns
// the job's result.
using program_fn = std::function<json(job_context&)>;

struct program_info {
  std::string name;
  std::string help;
  json schema;  // arg_schema::describe()
};

// A job's timing, in microseconds. Four instants: accepted (submit()
// called), root started (the root task's first instruction), root returned,
// terminal (the state decided). The first three fields are the spans
// between consecutive instants, so queued_us + run_us + end_us == flow_us
// (up to double rounding); a job not yet at an instant is measured up to
// now, one that never started (cancelled while queued) has run_us = end_us
// = 0 and queued_us = flow_us.
struct job_timing {
  double queued_us = 0;  // accepted -> root started (-> terminal or now if it never started)
  double run_us = 0;     // root started -> root returned (or now)
  double flow_us = 0;    // accepted -> terminal (or now): AMCilk's flow time
  // The server's own overheads (AMCilk Sec. 5.1, "starting a job" and
  // "removing a job"), parts of the spans above, 0 until the job is
  // terminal: start_us from the start decision (the submit() call for a job
  // admitted at once, the dequeue for a queued one) to the root started, so
  // start_us <= queued_us; setup_us is the part of start_us until the root
  // task is submitted (the job's pool created); the rest, start_us -
  // setup_us, is the submission and the wait for the policy to give the pool
  // a core and for that core to take the root, which under load is mostly
  // queueing, not overhead. remove_us is the runtime::remove_pool call
  // after the root returned (remove_us <= end_us).
  double start_us = 0;
  double setup_us = 0;
  double remove_us = 0;
  // Root returned -> terminal: the wait for the job's detached work and its
  // last worker to leave the pool, the reaper's wake-up, remove_us and the
  // terminal transition. remove_us alone can be made small by waiting
  // before it; this is what a caller waits.
  double end_us = 0;
};

struct job_info {
  job_id id = 0;
  std::string program;
  std::string job_class;  // "" or the submit option's class
  job_state state = job_state::queued;
  json result;        // done: the program's result
  std::string error;  // failed: the exception's message; cancelled/rejected: why
  job_timing timing;  // filled in as far as the job got
  std::optional<std::uint32_t> pool;  // the job's pool while it runs (runtime_stats' pool ids)
  // Running, and told to stop (cancel, drain's deadline): it ends cancelled
  // once its program returns or throws; until then its state stays running.
  bool cancel_requested = false;
  unsigned cores = 0;  // cores serving the job's pool now (running jobs)
  double work_s = 0;   // worker-seconds working in the job's pool so far
  double look_s = 0;   // worker-seconds stealing/idle in the job's pool so far
};
// The protocol's JSON form of a job (docs/server.md): id, program, state,
// result / error, timing, cores.
json to_json(const job_info& j);

struct submit_options {
  // Optional priority class (e.g. "interactive", "batch"); classes map to
  // pool ranks through job_server_options::classes.
  std::string job_class{};
  // Optional elastic real-time parameters of the job (AMCilk Sec. 6.2): its pool
  // gets them (pool_options::elastic), so the `elastic` policy allots its cores
  // from them; other policies ignore them. submit() checks them (bad_args).
  std::optional<promptly::elastic_params> elastic{};
  // Optional expected work of the job, in milliseconds of one core: the
  // `serpt` policy's size estimate for it (docs/job-policies.md). submit()
  // throws error{bad_args} unless it is finite and in (0, 86,400,000].
  std::optional<double> size_hint_ms{};
};

// A periodic task (AMCilk Sec. 6.2's elastic real-time jobs): the server
// releases one job, an instance, every `period`; an instance's deadline is
// its release time + period (implicit deadlines). Instances are ordinary
// jobs (own id, admission, policy), submitted as `submit` would.
using periodic_id = std::uint64_t;
struct periodic_options {
  std::chrono::microseconds period{0};  // >= 100 us
  std::uint64_t count = 0;              // instances to release; 0 = until cancelled or draining
  submit_options submit{};              // class and elastic parameters of every instance
};
struct periodic_info {
  periodic_id id = 0;
  std::string program;
  std::chrono::microseconds period{0};
  std::uint64_t count = 0;  // as asked (0 = unbounded)
  bool active = false;      // more instances will be released
  std::uint64_t released = 0;  // instances released (each accepted or rejected)
  std::uint64_t done = 0, failed = 0, cancelled = 0, rejected = 0;
  // Instances that ended (done, failed or cancelled) after their deadline,
  // plus the rejected ones and the releases skipped because the release
  // thread fell a whole period behind (neither ran by its deadline).
  std::uint64_t missed = 0;
  job_id last_job = 0;  // the newest accepted instance (0 = none)
};
json to_json(const periodic_info& p);

class job_server;
namespace detail {
struct job_record;
}

// A handle to one job; copyable; valid as long as its job_server lives.
// It keeps its job's record, so wait() and wait_for() answer however long
// ago the job ended (status() and the server's by-id calls stop answering
// result_ttl after the end, like the protocol).
class job_handle {
 public:
  [[nodiscard]] job_id id() const noexcept { return id_; }
  [[nodiscard]] job_info status() const;
  // Blocks the calling thread (or parks the calling task) until terminal.
  job_info wait() const;
  // true if the job is terminal after at most d.
  [[nodiscard]] bool wait_for(std::chrono::nanoseconds d) const;
  // Requests cancellation; see job_server::cancel.
  bool cancel() const;

 private:
  friend class job_server;
  job_handle(job_server* s, job_id id, std::shared_ptr<detail::job_record> r) noexcept
      : server_(s), id_(id), record_(std::move(r)) {}
  job_server* server_;
  job_id id_;
  std::shared_ptr<detail::job_record> record_;
};

struct job_server_options {
  // Admission control (AMCilk Sec. 4.2): at most max_running jobs run at
  // once; up to max_queued more wait in FIFO order; beyond that submit
  // throws error{rejected}.
  std::size_t max_running = 64;
  std::size_t max_queued = 1024;
  // How long a terminal job stays queryable by id.
  std::chrono::milliseconds result_ttl{std::chrono::minutes(10)};
  // Priority classes by name -> pool rank (0 = most urgent); a job without
  // a class gets default_rank. Unknown classes are bad_args.
  std::vector<std::pair<std::string, unsigned>> classes{{"interactive", 0}, {"batch", 1}};
  unsigned default_rank = 1;
  // Flow-time percentiles in stats() are over the last `window` jobs that
  // ended done (AMCilk Sec. 6.1: flow time = arrival to completion).
  std::size_t window = 4096;
};

struct program_stats {
  std::string program;
  std::uint64_t done = 0, failed = 0, cancelled = 0;
  double flow_mean_us = 0, flow_p50_us = 0, flow_p99_us = 0;  // over the window
};

// A latency distribution over the server's sliding window (microseconds).
struct latency_summary {
  std::size_t samples = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0, max_us = 0;
};

struct server_stats {
  std::uint64_t submitted = 0, rejected = 0, done = 0, failed = 0, cancelled = 0;
  std::size_t running = 0, queued = 0;
  unsigned cores_in_use = 0;  // workers serving some job's pool now
  unsigned core_limit = 0;    // set_cores (0 = no limit)
  bool draining = false;
  double flow_mean_us = 0, flow_p50_us = 0, flow_p99_us = 0;  // all programs, over the window
  // job_timing::start_us, setup_us, remove_us and end_us of the last `window` jobs that started / were removed.
  latency_summary start, setup, remove, end;
  std::vector<program_stats> programs;
  std::vector<job_info> jobs;  // running jobs with cores and work/look time
  std::vector<periodic_info> periodic;  // periodic tasks (active ones and ended ones not yet expired)
  // The size estimator's learning and its errors per source (hint, bucket,
  // program, prior): docs/job-policies.md, "serpt".
  json size_estimates;
};
json to_json(const server_stats& s);

class job_server {
 public:
  // The runtime must outlive the server. The server creates one pool per
  // running job and removes it when the job ends.
  explicit job_server(promptly::runtime& rt, job_server_options opts = {});
  // Cancels queued jobs, waits for running ones (drain(0) semantics).
  ~job_server();
  job_server(const job_server&) = delete;
  job_server& operator=(const job_server&) = delete;

  // Throws std::invalid_argument for an empty or duplicate name.
  void register_program(std::string name, program_fn fn, arg_schema schema = {}, std::string help = {});
  [[nodiscard]] std::vector<program_info> programs() const;

  // Validates and admits a job; it starts at once if fewer than max_running
  // run, else it queues. Throws error{unknown_program | bad_args | rejected}.
  [[nodiscard]] job_handle submit(std::string_view program, const json& args, submit_options opts = {});

  // By id (error{unknown_job} for an id never issued or expired):
  [[nodiscard]] job_info status(job_id id) const;
  job_info wait(job_id id) const;
  [[nodiscard]] bool wait_for(job_id id, std::chrono::nanoseconds d) const;
  // A queued job is cancelled at once; a running one is told to stop
  // (job_context::cancelled) and ends as cancelled when its root returns
  // (whatever it returns) or throws. Returns true exactly for the jobs that
  // end cancelled, false if the job was already terminal.
  bool cancel(job_id id);
  // Calls f(info) once when the job becomes terminal (at once if it is);
  // f runs on the thread that finished the job (the server's reaper thread,
  // or the caller of cancel / drain for a queued job) and must not block or
  // wait for jobs; an exception it throws is dropped.
  void on_terminal(job_id id, std::function<void(const job_info&)> f);

  // Releases an instance of `program` now and then every opts.period (a
  // thread of the server keeps the releases on the period's grid: a late
  // release does not shift the next). The first instance is submitted
  // before this returns, so its errors (unknown_program, bad_args,
  // rejected) are thrown here and no task is made; a later rejected
  // instance counts as rejected and missed. Throws error{bad_args} for a
  // period under 100 us, error{rejected} when 256 tasks are active already.
  // Draining (stop_accepting) ends every periodic task.
  [[nodiscard]] periodic_id submit_periodic(std::string_view program, const json& args, periodic_options opts);
  // error{unknown_job} for an id never issued or ended more than
  // result_ttl ago.
  [[nodiscard]] periodic_info periodic_status(periodic_id id) const;
  // Releases no further instance; released ones run on. Returns true if the
  // task was active.
  bool cancel_periodic(periodic_id id);

  [[nodiscard]] std::vector<job_info> jobs() const;  // live (queued and running)
  [[nodiscard]] server_stats stats() const;

  // Selects the runtime's core-allocation policy by name (runtime::set_policy).
  void set_policy(const std::string& name);
  // Occupancy control (AMCilk Sec. 4.2): use at most n cores from now on
  // (0 = all). Throws std::invalid_argument if n exceeds the workers.
  void set_cores(unsigned n);

  // Draining: submit throws error{rejected, "draining"} from now on; queued
  // and running jobs continue. drain(timeout) waits up to `timeout` for all
  // jobs to finish, then cancels the rest and waits for them; returns the
  // number of jobs it cancelled. When it returns every job is terminal and
  // every on_terminal callback has run. Call it from a plain thread.
  void stop_accepting();
  std::size_t drain(std::chrono::milliseconds timeout);
  // drain with a real deadline: as drain(timeout), but the jobs cancelled at
  // the timeout get at most `cancel_grace` to stop; the ones still running
  // then (programs that ignore cancellation) are abandoned: reported, not
  // waited for. Every other job is terminal and its callbacks have run when
  // it returns. A server that abandoned jobs cannot be destroyed before they
  // end (its destructor waits for them, as the runtime's does for their
  // pools): a process in that state exits without destroying them
  // (promptlyd: docs/server.md, "SIGTERM").
  struct drain_report {
    std::size_t cancelled = 0;       // as drain(timeout) returns
    std::vector<job_info> abandoned;  // running after the grace, by id
  };
  drain_report drain_within(std::chrono::milliseconds timeout, std::chrono::milliseconds cancel_grace);
  [[nodiscard]] bool accepting() const noexcept;
  // Whether a submit now would be admitted (running or queue space left and
  // not draining): /readyz.
  [[nodiscard]] bool ready() const noexcept;

  struct state;
  struct periodic_state;

 private:
  friend class job_handle;
  job_info wait_on(const std::shared_ptr<detail::job_record>& r) const;
  bool wait_for_on(const std::shared_ptr<detail::job_record>& r, std::chrono::nanoseconds d) const;
  std::unique_ptr<state> s_;
  std::unique_ptr<periodic_state> p_;  // periodic tasks and their release thread (periodic.cpp)
};

}  // namespace promptly::server
