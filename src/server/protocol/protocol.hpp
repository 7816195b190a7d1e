// promptlyd's line protocol, version 1 (docs/server.md): newline-delimited
// JSON requests in, one reply line per request out, in request order, per
// connection. This layer owns framing, parsing, dispatch to a job_server and
// reply ordering; it does no I/O (the daemon's front end and the tests feed it
// bytes and take its output), so the fuzzer can drive exactly what the
// daemon runs.
//
// Invariants:
// * Every request line gets exactly one reply line; replies leave in the
//   order their requests arrived, whatever order they complete in (a waiting
//   reply holds back the replies behind it on the same connection).
// * Every reply held for ordering counts toward the session's bounds
//   (max_pending_replies, max_buffered_bytes): held_bytes_ is the size of
//   the ready slots' lines, so a client cannot grow the server's memory by
//   pipelining behind a wait (asserted in Debug).
// * A line longer than max_line_bytes gets one bad_request reply and is
//   skipped up to its newline; the connection goes on.
// * Nothing a client sends can throw out of feed()/end_input(): every error
//   becomes an error reply.
// * Stream lines of a subscription ({"stream":"stats",...}) are not replies:
//   they may overtake replies still waiting, never split one.
// * Completions arrive on job threads (job_server::on_terminal); they only
//   take the session's mutex and call notify, never block on I/O.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <promptly/server/job_server.hpp>

#include "server/protocol/ops.hpp"
#include "server/protocol/service.hpp"

namespace promptly::server::protocol {

inline constexpr int version = 1;
// Requests are size-limited (docs/server.md, "Limits").
inline constexpr std::size_t max_line_bytes = std::size_t{1} << 20;
inline constexpr unsigned max_json_depth = 64;
// subscribe's interval bounds: a subscriber cannot make the server build
// stats more often than every 10 ms.
inline constexpr std::int64_t min_interval_ms = 10;
inline constexpr std::int64_t max_interval_ms = 3'600'000;

struct session_options {
  // If set, every request must carry this token ("token" field) unless the
  // connection sent a successful {"op":"auth"} first; else not_allowed.
  std::optional<std::string> token;
  // Backpressure: wants_input() turns false while this many replies are
  // pending (waiting for their jobs, or ready but held behind a waiting one
  // for ordering), or while the reply bytes buffered reach
  // max_buffered_bytes; the front end then stops reading the connection.
  std::size_t max_pending_replies = 1 << 16;
  std::size_t max_buffered_bytes = std::size_t{8} << 20;
};

class session : public std::enable_shared_from_this<session> {
 public:
  // notify is called (from any thread, with no lock held) whenever output
  // became available or the subscription changed; it must not block.
  static std::shared_ptr<session> create(service& svc, session_options opts, std::function<void()> notify);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // ---- input side: one thread at a time (the connection's reader) ----
  // Frames `bytes` into lines and dispatches every complete line.
  void feed(std::string_view bytes);
  // The peer closed its sending side: a partial last line is a truncated
  // request (bad_request); replies still pending are delivered.
  void end_input();
  [[nodiscard]] bool input_ended() const noexcept { return input_ended_; }
  // False after end_input() and while a bound of session_options is
  // reached (backpressure): pending replies, or buffered_bytes() plus
  // unsent_elsewhere (output the caller took but has not written yet).
  [[nodiscard]] bool wants_input(std::size_t unsent_elsewhere = 0) const;
  // Reply bytes the session holds: ready replies held behind a waiting one,
  // plus output not taken yet.
  [[nodiscard]] std::size_t buffered_bytes() const;
  // The listener needs a token and no request of this connection has
  // carried the right one yet (auth op or per-request token): what the
  // front end's authentication grace period looks at.
  [[nodiscard]] bool awaiting_token() const noexcept { return opts_.token && !token_seen_; }

  // ---- output side: any thread ----
  // Moves out the bytes ready to be written, in order.
  [[nodiscard]] std::string take_output();
  // Input ended, every reply has been taken, no subscription: the
  // connection can be closed once its last bytes are written.
  [[nodiscard]] bool finished() const;
  // Replies accepted but not yet taken (for drain accounting).
  [[nodiscard]] std::size_t pending_replies() const;

  // ---- subscription (docs/server.md, "subscribe") ----
  // When the next stats line is due, if subscribed.
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> next_stream_at() const;
  // Appends a stats line if one is due at `now`; returns whether it did.
  bool stream_tick(std::chrono::steady_clock::time_point now);

  // Requests handled so far (for tests and metrics).
  [[nodiscard]] std::uint64_t requests() const noexcept { return next_seq_; }

 private:
  session(service& svc, session_options opts, std::function<void()> notify);

  struct slot {
    bool ready = false;
    std::string line;
    // Applied when the reply is emitted, so a stream starts after its
    // subscribe reply: 0 = nothing, >0 = subscribe at this interval, -1 = unsubscribe.
    std::int64_t subscribe_ms = 0;
  };

  void handle_line(std::string_view line);
  std::uint64_t open_slot();
  void complete(std::uint64_t seq, std::string line, std::int64_t subscribe_ms = 0);
  // Parse one request line and run its op (ops.hpp); completes
  // `seq` now or later.
  void dispatch(std::uint64_t seq, std::string_view line);
  // Throws a refusal unless the request may run on this connection.
  void authenticate(const json& req, op o);
  // Where the answer to request `seq` goes.
  reply_fn reply_to(std::uint64_t seq, const json* tag);
  void fail(std::uint64_t seq, error_code code, std::string_view message, const json* tag = nullptr);

  service& svc_;
  session_options opts_;
  std::function<void()> notify_;

  // Input state (reader thread only).
  std::string partial_;
  bool discarding_ = false;  // inside an over-long line, skipping to its newline
  bool input_ended_ = false;
  bool authenticated_ = false;  // a successful auth op: later requests need no token
  bool token_seen_ = false;     // some request carried the right token
  std::uint64_t next_seq_ = 0;

  mutable std::mutex mu_;
  // Guarded by mu_:
  std::deque<slot> slots_;  // slots_[i] is request base_ + i
  std::uint64_t base_ = 0;
  std::size_t unready_ = 0;
  std::size_t held_bytes_ = 0;  // lines (with newline) of ready slots not yet emitted
  std::string out_;
  std::int64_t stream_ms_ = 0;
  std::uint64_t stream_seq_ = 0;
  std::chrono::steady_clock::time_point stream_next_{};
};

}  // namespace promptly::server::protocol
