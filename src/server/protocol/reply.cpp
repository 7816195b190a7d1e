#include "server/protocol/reply.hpp"

#include "server/protocol/protocol.hpp"

namespace promptly::server::protocol {

std::string dump(const json& j) {
  // replace: a message or result with invalid UTF-8 must still make a
  // reply (nlohmann would throw type_error 316 otherwise).
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string clip(std::string_view s) {
  if (s.size() <= max_message_bytes) return std::string(s);
  return std::string(s.substr(0, max_message_bytes)) + "...";
}

std::string error_line(std::string_view code, std::string_view message, const json* tag) {
  json j{{"ok", false}, {"error", {{"code", code}, {"message", clip(message)}}}};
  if (tag) j["tag"] = *tag;
  return dump(j);
}

std::string ok_line(json j, const json* tag) {
  j["ok"] = true;
  if (tag) j["tag"] = *tag;
  return dump(j);
}

std::string job_line(const job_info& info, const json* tag) { return ok_line(to_json(info), tag); }

std::string stream_line(const server_stats& s, std::uint64_t seq, std::int64_t interval_ms) {
  json j = to_json(s);
  j["ok"] = true;
  j["stream"] = "stats";
  j["seq"] = seq;
  j["interval_ms"] = interval_ms;
  return dump(j);
}

std::string line_too_long_message() {
  return "line too long: a request line may have at most " + std::to_string(max_line_bytes) + " bytes";
}

}  // namespace promptly::server::protocol
