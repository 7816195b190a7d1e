// The email server's line protocol (apps/email/README.md has the full description).
//
// Requests, one per line:
//   USER <name>                  log in (creates the mailbox on first use)  -> OK <name> <messages>
//   SEND <to> <text...>          send text to <to>'s mailbox   -> ACK <seq>, later DONE <seq> SEND <id>
//   SORT <date|sender|size>      sort my mailbox               -> ACK <seq>, later DONE <seq> SORT ...
//   PRINT <index>                print my index-th message (0 = oldest) -> ACK <seq>, later
//                                DONE <seq> PRINT <id> <text>
//   STATS / RESET                server counters as one JSON line / zero them  -> {...} / OK reset
//   HELP / QUIT                  this list / close                 -> lines ending with "." / BYE
// Any malformed request gets one "ERR <reason>" line and the connection goes on.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

namespace email {

enum class verb { user, send, sort, print, stats, reset, help, quit };
enum class sort_key { date, sender, size };

struct request {
  verb what{};
  std::string name;   // USER: the user; SEND: the recipient
  std::string text;   // SEND
  sort_key key{};     // SORT
  std::size_t index = 0;  // PRINT
};

// The request, or the reason it is malformed (for the ERR line).
std::variant<request, std::string> parse_request(std::string_view line);

std::string_view name_of(sort_key k) noexcept;

// User names: 1-32 characters of [A-Za-z0-9_.-].
[[nodiscard]] bool valid_user_name(std::string_view name) noexcept;

extern const char* const help_text;

}  // namespace email
