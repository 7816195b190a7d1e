// The origin's 4096 generated web sites: site i is a deterministic page of 0.5-15.5 KiB, so the
// driver can check every byte the proxy returns.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace proxy {

inline constexpr std::size_t site_count = 4096;

std::string site_body(std::size_t i);
// "/site/<i>" with i < site_count -> i.
std::optional<std::size_t> site_of_path(std::string_view path);

}  // namespace proxy
