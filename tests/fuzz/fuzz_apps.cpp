// libFuzzer target of the apps' request parsers, which read whatever a client sends: the email
// server's request lines (apps/email/protocol.cpp) and the proxy's HTTP stream
// (apps/proxy/http_stream.cpp, over nodejs/http-parser), fed in chunks of a size the input
// chooses, as bytes arrive from a socket. Beyond "no crash, no sanitizer report" it checks the
// parsers' promises: a parsed USER name is valid, every refusal names its reason, feed() stops
// early only at the end of a message, and no message outgrows the stream's byte limit.
// Built and run by tests/fuzz/run.sh apps (clang++-14, -fsanitize=fuzzer,address).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "http_stream.hpp"
#include "protocol.hpp"

namespace {

constexpr std::size_t max_bytes = 4096;  // the stream's limit here (the proxy's is 1 MiB)

void fuzz_email_line(std::string_view line) {
  auto r = email::parse_request(line);
  if (auto* q = std::get_if<email::request>(&r)) {
    if (q->what == email::verb::user && !email::valid_user_name(q->name)) std::abort();
  } else if (std::get<std::string>(r).empty()) {
    std::abort();  // an ERR line must say what is wrong
  }
}

void fuzz_http(std::string_view in, http_parser_type type, std::size_t chunk) {
  proxy::http_stream s(type, max_bytes);
  try {
    for (std::size_t at = 0; at < in.size();) {
      const std::size_t n = std::min(chunk, in.size() - at);
      const std::size_t used = s.feed(in.data() + at, n);
      if (used > n) std::abort();
      at += used;
      if (s.complete()) {
        if (s.take().body.size() > max_bytes) std::abort();
      } else if (used < n) {
        std::abort();  // stopped early without a complete message: the rest would be lost
      }
    }
    s.finish();
    if (s.complete() && s.take().body.size() > max_bytes) std::abort();
  } catch (const proxy::http_error& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
}

}  // namespace

// The first byte picks the parser and the chunk size; the rest is the client's bytes.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode % 2 == 0)
    fuzz_email_line(in);
  else
    fuzz_http(in, (mode / 2) % 2 ? HTTP_RESPONSE : HTTP_REQUEST, 1 + (mode / 4) % 64);
  return 0;
}
