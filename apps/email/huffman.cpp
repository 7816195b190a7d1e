#include "huffman.hpp"

#include <zlib.h>

#include <stdexcept>

namespace email {
namespace {
// -15: a raw deflate stream (no zlib header or checksum; the message text carries its own).
constexpr int raw_window_bits = -15;

std::runtime_error zlib_error(const char* what, int rc) {
  return std::runtime_error(std::string("email huffman: ") + what + " failed: " + zError(rc));
}
}  // namespace

std::string huffman_compress(std::string_view plain) {
  z_stream z{};
  int rc = deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, raw_window_bits, 8, Z_HUFFMAN_ONLY);
  if (rc != Z_OK) throw zlib_error("deflateInit2", rc);
  std::string out(deflateBound(&z, plain.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  rc = deflate(&z, Z_FINISH);
  const auto produced = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw zlib_error("deflate", rc);
  out.resize(produced);
  return out;
}

std::string huffman_decompress(std::string_view packed, std::size_t plain_size) {
  z_stream z{};
  int rc = inflateInit2(&z, raw_window_bits);
  if (rc != Z_OK) throw zlib_error("inflateInit2", rc);
  std::string out(plain_size, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  rc = inflate(&z, Z_FINISH);
  const auto produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw zlib_error("inflate (corrupt or longer than expected)", rc == Z_OK || rc == Z_BUF_ERROR ? Z_DATA_ERROR : rc);
  if (produced != plain_size)
    throw std::runtime_error("email huffman: decoded " + std::to_string(produced) + " bytes, expected " +
                             std::to_string(plain_size));
  return out;
}

}  // namespace email
