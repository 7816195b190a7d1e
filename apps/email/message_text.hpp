// Message bodies that carry their own checksum, so a client can verify that a message it
// prints came back intact through compression and decompression.
//
// Format (one line, no '\n'): "from=<sender> n=<k> sum=<16 hex digits> <words...>", exactly the
// requested length; sum is the FNV-1a hash of everything after the header's trailing space.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace email {

// A body of `bytes` bytes (at least the header's length) from `from`, its k-th message; the
// words are drawn from a fixed English-like vocabulary with `seed`, so Huffman coding has
// the redundancy of text to remove.
std::string make_body(std::string_view from, std::uint64_t k, std::size_t bytes, std::uint64_t seed);

// True if `body` has the header and its checksum matches.
[[nodiscard]] bool body_is_intact(std::string_view body) noexcept;

}  // namespace email
