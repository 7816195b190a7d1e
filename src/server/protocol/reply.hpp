// The protocol's reply lines (docs/server.md, "Replies"): one JSON object
// per line, without the newline. Every reply has "ok"; an error reply has
// {"code","message"} under "error"; a request's "tag" is echoed.
//
// Invariant: these functions never throw on content (invalid UTF-8 in a
// message or result is replaced, never an exception), so a reply can
// always be produced, including on a job thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <promptly/server/job_server.hpp>

namespace promptly::server::protocol {

// Messages quoting client input are cut to this many bytes.
inline constexpr std::size_t max_message_bytes = 256;

[[nodiscard]] std::string dump(const json& j);
[[nodiscard]] std::string error_line(std::string_view code, std::string_view message, const json* tag);
// {"ok":true, <fields of j>, "tag":...}
[[nodiscard]] std::string ok_line(json j, const json* tag);
// A job as a reply: ok + to_json(info).
[[nodiscard]] std::string job_line(const job_info& info, const json* tag);
// One line of a subscription stream.
[[nodiscard]] std::string stream_line(const server_stats& s, std::uint64_t seq, std::int64_t interval_ms);
[[nodiscard]] std::string line_too_long_message();
// s cut to max_message_bytes (marked with "...").
[[nodiscard]] std::string clip(std::string_view s);

}  // namespace promptly::server::protocol
