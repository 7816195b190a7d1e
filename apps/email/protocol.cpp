#include "protocol.hpp"

#include <charconv>

namespace email {
namespace {

// Splits off the first space-separated word of `s`.
std::string_view take_word(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  auto end = s.find(' ');
  std::string_view w = s.substr(0, end);
  s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  return w;
}

bool only_spaces(std::string_view s) { return s.find_first_not_of(' ') == std::string_view::npos; }

}  // namespace

const char* const help_text =
    "USER <name>: log in | SEND <to> <text>: send | SORT <date|sender|size>: sort my mailbox | "
    "PRINT <index>: print my index-th message (0 = oldest) | STATS | RESET | QUIT.";

bool valid_user_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '-'))
      return false;
  return true;
}

std::string_view name_of(sort_key k) noexcept {
  switch (k) {
    case sort_key::date: return "date";
    case sort_key::sender: return "sender";
    case sort_key::size: return "size";
  }
  return "?";
}

std::variant<request, std::string> parse_request(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string_view rest = line;
  std::string_view cmd = take_word(rest);
  request r;
  if (cmd == "USER") {
    r.what = verb::user;
    r.name = std::string(take_word(rest));
    if (!valid_user_name(r.name)) return std::string("USER needs a name of 1-32 characters [A-Za-z0-9_.-]");
    if (!only_spaces(rest)) return std::string("USER takes one name");
  } else if (cmd == "SEND") {
    r.what = verb::send;
    r.name = std::string(take_word(rest));
    if (!valid_user_name(r.name)) return std::string("SEND needs a recipient name of 1-32 characters [A-Za-z0-9_.-]");
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) return std::string("SEND needs a text after the recipient");
    r.text = std::string(rest);
  } else if (cmd == "SORT") {
    r.what = verb::sort;
    std::string_view k = take_word(rest);
    if (k == "date") r.key = sort_key::date;
    else if (k == "sender") r.key = sort_key::sender;
    else if (k == "size") r.key = sort_key::size;
    else return std::string("SORT needs a key: date, sender or size");
    if (!only_spaces(rest)) return std::string("SORT takes one key");
  } else if (cmd == "PRINT") {
    r.what = verb::print;
    std::string_view n = take_word(rest);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), r.index);
    if (n.empty() || ec != std::errc{} || end != n.data() + n.size())
      return std::string("PRINT needs a message index (0 = oldest)");
    if (!only_spaces(rest)) return std::string("PRINT takes one index");
  } else if (cmd == "STATS" || cmd == "RESET" || cmd == "HELP" || cmd == "QUIT") {
    r.what = cmd == "STATS" ? verb::stats : cmd == "RESET" ? verb::reset : cmd == "HELP" ? verb::help : verb::quit;
    if (!only_spaces(rest)) return std::string(cmd) + " takes no argument";
  } else if (cmd.empty()) {
    return std::string("empty request; HELP lists the requests");
  } else {
    return "unknown request '" + std::string(cmd.substr(0, 32)) + "'; HELP lists the requests";
  }
  return r;
}

}  // namespace email
