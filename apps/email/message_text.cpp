#include "message_text.hpp"

#include <array>
#include <cstdio>

namespace email {
namespace {

constexpr std::array<std::string_view, 32> vocabulary{
    "the",     "meeting", "is",    "moved",  "to",     "thursday", "please", "review",
    "attached", "report", "and",   "send",   "your",   "comments", "before", "noon",
    "we",      "need",    "a",     "budget", "for",    "next",     "quarter", "thanks",
    "regards", "project", "status", "update", "server", "release",  "notes",  "team"};

std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t next(std::uint64_t& x) noexcept {  // xorshift64*
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 2685821657736338717ull;
}

}  // namespace

std::string make_body(std::string_view from, std::uint64_t k, std::size_t bytes, std::uint64_t seed) {
  std::string text;
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + k + 1;
  std::string header_prefix = "from=" + std::string(from) + " n=" + std::to_string(k) + " sum=";
  const std::size_t header_len = header_prefix.size() + 16 + 1;
  const std::size_t want = bytes > header_len ? bytes - header_len : 0;
  while (text.size() < want) {
    text += vocabulary[next(x) % vocabulary.size()];
    text += ' ';
  }
  text.resize(want);
  if (!text.empty()) text.back() = '.';
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return header_prefix + hex + " " + text;
}

bool body_is_intact(std::string_view body) noexcept {
  auto sum_at = body.find(" sum=");
  if (body.substr(0, 5) != "from=" || sum_at == std::string_view::npos || body.size() < sum_at + 5 + 17) return false;
  std::string_view hex = body.substr(sum_at + 5, 16);
  if (body[sum_at + 5 + 16] != ' ') return false;
  std::uint64_t want = 0;
  for (char c : hex) {
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return false;
    want = want << 4 | static_cast<unsigned>(v);
  }
  return fnv1a(body.substr(sum_at + 5 + 17)) == want;
}

}  // namespace email
