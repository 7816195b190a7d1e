// The ops of protocol version 1 as a dispatch table (docs/server.md,
// "Ops"): one function per op, shared by the line protocol's sessions
// (protocol.cpp) and the HTTP API (tools/promptlyd/http_api.cpp), so both front doors
// run the same checks and answer with the same error codes.
//
// Invariant: run_op calls its reply function exactly once per request,
// either before it returns or later from a job thread (wait; submit with
// "wait":true), never with a lock of the caller held; it never throws.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <promptly/server/job_server.hpp>

#include "server/protocol/service.hpp"

namespace promptly::server::protocol {

// What an op answers: ok with the reply's fields (without "ok" and "tag"),
// or an error code and message.
struct op_reply {
  bool ok = true;
  json result;
  std::string code;
  std::string message;
  // subscribe/unsubscribe only: > 0 start a stats stream at this interval, -1 stop it.
  std::int64_t subscribe_ms = 0;
};
using reply_fn = std::function<void(op_reply)>;

// A request refused by a check (thrown by the checks, answered by run_op or
// the front door that called them).
struct refusal {
  std::string code;
  std::string message;
};
[[noreturn]] void refuse(error_code c, std::string message);

// Runs op `o` on `req` (a JSON object; its "op", "tag" and "token" are not
// looked at) against svc's job server and calls `done` once with the
// answer. Every error is counted in svc and becomes an error reply; the
// caller counts the request (svc.count_request) when it knows the op.
void run_op(service& svc, op o, std::string_view op_name, const json& req, reply_fn done);

// Whether s nests arrays and objects at most `limit` deep outside strings
// (checked before parsing, so a line of a million '[' is refused cheaply).
[[nodiscard]] bool nesting_within(std::string_view s, unsigned limit);
// a == b, in time independent of where they differ (a remote client cannot
// find a token byte by byte from reply timing); false if b is empty.
[[nodiscard]] bool same_token(std::string_view a, std::string_view b);

}  // namespace promptly::server::protocol
