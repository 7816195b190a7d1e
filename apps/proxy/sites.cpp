#include "sites.hpp"

#include <charconv>

namespace proxy {

std::string site_body(std::size_t i) {
  const std::size_t size = 512 + (i * 2654435761u % 16) * 1024;
  std::string s = "<html><title>site " + std::to_string(i) + "</title><body>";
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
  while (s.size() + 15 < size) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    s += static_cast<char>('a' + (x * 2685821657736338717ull >> 59) % 26);
  }
  s.resize(size - 14, '.');
  return s + "</body></html>";
}

std::optional<std::size_t> site_of_path(std::string_view path) {
  if (path.substr(0, 6) != "/site/") return std::nullopt;
  path.remove_prefix(6);
  std::size_t i = 0;
  auto [end, ec] = std::from_chars(path.data(), path.data() + path.size(), i);
  if (ec != std::errc{} || end != path.data() + path.size() || i >= site_count) return std::nullopt;
  return i;
}

}  // namespace proxy
