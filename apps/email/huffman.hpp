// Huffman coding of message bodies with zlib: deflate with strategy Z_HUFFMAN_ONLY emits only
// dynamic-Huffman blocks (no string matching), i.e. the Huffman code of the text (CLRS Ch. 16.3,
// which the futures-and-state paper's email client cites) in a well-kept, standard container.
// The Go peer uses compress/flate's HuffmanOnly level: the same coding.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace email {

// The Huffman-coded form of `plain` (raw deflate stream). Throws std::runtime_error if zlib fails.
std::string huffman_compress(std::string_view plain);

// The text `packed` codes; `plain_size` is its length. Throws std::runtime_error naming the problem
// if `packed` is corrupt or does not decode to exactly `plain_size` bytes.
std::string huffman_decompress(std::string_view packed, std::size_t plain_size);

}  // namespace email
