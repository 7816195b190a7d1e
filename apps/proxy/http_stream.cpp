#include "http_stream.hpp"

#include <strings.h>

#include <charconv>
#include <string_view>

namespace proxy {
namespace {
http_stream& self(http_parser* p) { return *static_cast<http_stream*>(p->data); }
}  // namespace

http_stream::http_stream(http_parser_type type, std::size_t max_bytes) : type_(type), max_bytes_(max_bytes) {
  http_parser_init(&parser_, type);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = on_begin;
  settings_.on_url = on_url;
  settings_.on_header_field = on_header_field;
  settings_.on_header_value = on_header_value;
  settings_.on_headers_complete = on_headers_complete;
  settings_.on_body = on_body;
  settings_.on_message_complete = on_complete;
}

bool http_stream::grow(std::size_t n) {
  seen_ += n;
  too_long_ = seen_ > max_bytes_;
  return !too_long_;
}

int http_stream::on_begin(http_parser* p) {
  self(p).started_ = true;
  return 0;
}
int http_stream::on_url(http_parser* p, const char* at, std::size_t n) {
  auto& s = self(p);
  s.msg_.url.append(at, n);
  return s.grow(n) ? 0 : 1;
}
int http_stream::on_header_field(http_parser* p, const char* at, std::size_t n) {
  auto& s = self(p);
  s.field_.assign(at, n);  // header names arrive whole in practice; names are matched as a whole
  auto is = [&](std::string_view name) { return s.field_.size() == name.size() && strncasecmp(s.field_.data(), name.data(), name.size()) == 0; };
  s.in_field_ = is("X-Cache") ? field::x_cache : is("X-Reacted-At-Ns") ? field::reacted_at : field::other;
  return s.grow(n) ? 0 : 1;
}
int http_stream::on_header_value(http_parser* p, const char* at, std::size_t n) {
  auto& s = self(p);
  if (s.in_field_ == field::x_cache) s.msg_.x_cache.append(at, n);
  if (s.in_field_ == field::reacted_at) s.reacted_text_.append(at, n);
  return s.grow(n) ? 0 : 1;
}
int http_stream::on_headers_complete(http_parser* p) {
  auto& s = self(p);
  if (s.type_ == HTTP_REQUEST) s.msg_.method = http_method_str(static_cast<http_method>(p->method));
  s.msg_.status = static_cast<int>(p->status_code);
  const char* end = s.reacted_text_.data() + s.reacted_text_.size();
  if (std::from_chars(s.reacted_text_.data(), end, s.msg_.reacted_at_ns).ptr != end) s.msg_.reacted_at_ns = 0;
  return 0;
}
int http_stream::on_body(http_parser* p, const char* at, std::size_t n) {
  auto& s = self(p);
  s.msg_.body.append(at, n);
  return s.grow(n) ? 0 : 1;
}
int http_stream::on_complete(http_parser* p) {
  auto& s = self(p);
  s.msg_.keep_alive = http_should_keep_alive(p) != 0;
  s.complete_ = true;
  http_parser_pause(p, 1);  // stop here: the next message's bytes stay with the caller
  return 0;
}

std::size_t http_stream::feed(const char* data, std::size_t n) {
  if (complete_) return 0;
  std::size_t used = http_parser_execute(&parser_, &settings_, data, n);
  const auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_PAUSED) return used;
  if (too_long_) throw http_error("HTTP message longer than " + std::to_string(max_bytes_) + " bytes");
  if (err != HPE_OK) throw http_error(std::string("malformed HTTP: ") + http_errno_description(err));
  return used;
}

void http_stream::finish() {
  if (complete_) return;
  http_parser_execute(&parser_, &settings_, nullptr, 0);  // end of file
  if (!complete_ && started_) throw http_error("connection closed inside an HTTP message");
}

http_message http_stream::take() {
  http_message m = std::move(msg_);
  msg_ = {};
  reacted_text_.clear();
  complete_ = started_ = false;
  seen_ = 0;
  http_parser_pause(&parser_, 0);
  http_parser_init(&parser_, type_);  // a clean state for the next message (keep-alive)
  parser_.data = this;
  return m;
}

}  // namespace proxy
