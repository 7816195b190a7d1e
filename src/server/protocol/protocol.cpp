// Framing, ordering and subscription of a protocol session (protocol.hpp);
// the ops themselves are in ops.cpp.
#include "server/protocol/protocol.hpp"

#include <algorithm>
#include <cassert>

#include "server/protocol/ops.hpp"
#include "server/protocol/reply.hpp"

namespace promptly::server::protocol {

std::shared_ptr<session> session::create(service& svc, session_options opts, std::function<void()> notify) {
  return std::shared_ptr<session>(new session(svc, std::move(opts), std::move(notify)));
}

session::session(service& svc, session_options opts, std::function<void()> notify)
    : svc_(svc), opts_(std::move(opts)), notify_(std::move(notify)) {}

session::~session() = default;

void session::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    if (discarding_) {
      // The rest of an over-long line: already answered, skip to its end.
      const auto nl = bytes.find('\n');
      if (nl == std::string_view::npos) return;
      bytes.remove_prefix(nl + 1);
      discarding_ = false;
      continue;
    }
    const auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      if (partial_.size() + bytes.size() > max_line_bytes) {
        partial_.clear();
        partial_.shrink_to_fit();
        discarding_ = true;
        fail(open_slot(), error_code::bad_request, line_too_long_message());
        return;
      }
      partial_.append(bytes);
      return;
    }
    const std::string_view piece = bytes.substr(0, nl);
    bytes.remove_prefix(nl + 1);
    if (partial_.size() + piece.size() > max_line_bytes) {
      partial_.clear();
      partial_.shrink_to_fit();
      fail(open_slot(), error_code::bad_request, line_too_long_message());
    } else if (partial_.empty()) {
      handle_line(piece);
    } else {
      partial_.append(piece);
      std::string line = std::move(partial_);
      partial_.clear();
      handle_line(line);
    }
  }
}

void session::end_input() {
  if (input_ended_) return;
  if (!partial_.empty() && partial_.find_first_not_of(" \t\r") != std::string::npos)
    fail(open_slot(), error_code::bad_request, "truncated request: the input ended before its newline");
  partial_.clear();
  discarding_ = false;
  input_ended_ = true;
  notify_();  // the front end may now be able to close
}

void session::handle_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // Blank lines are not requests (and get no reply), so a client may end
  // its requests with "\r\n" or separate them by empty lines.
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  dispatch(open_slot(), line);
}

std::uint64_t session::open_slot() {
  std::lock_guard lock(mu_);
  slots_.emplace_back();
  ++unready_;
  return next_seq_++;
}

void session::complete(std::uint64_t seq, std::string line, std::int64_t subscribe_ms) {
  bool emitted = false;
  {
    std::lock_guard lock(mu_);
    slot& s = slots_[seq - base_];
    s.ready = true;
    s.line = std::move(line);
    s.subscribe_ms = subscribe_ms;
    --unready_;
    held_bytes_ += s.line.size() + 1;
    // Replies leave in request order: emit the ready prefix only.
    while (!slots_.empty() && slots_.front().ready) {
      slot& head = slots_.front();
      assert(held_bytes_ >= head.line.size() + 1 && "held_bytes_ counts every ready slot");
      held_bytes_ -= head.line.size() + 1;
      out_ += head.line;
      out_ += '\n';
      if (head.subscribe_ms > 0) {
        stream_ms_ = head.subscribe_ms;
        stream_next_ = std::chrono::steady_clock::now();  // first stats line right after the reply
      } else if (head.subscribe_ms < 0) {
        stream_ms_ = 0;
      }
      slots_.pop_front();
      ++base_;
      emitted = true;
    }
    assert((!slots_.empty() || held_bytes_ == 0) && "no held bytes without held slots");
  }
  if (emitted) notify_();
}

void session::dispatch(std::uint64_t seq, std::string_view line) {
  json req;
  const json* tag = nullptr;
  try {
    if (!nesting_within(line, max_json_depth))
      refuse(error_code::bad_request, "not a request: JSON nested deeper than " + std::to_string(max_json_depth));
    try {
      req = json::parse(line);
    } catch (const json::exception& e) {
      refuse(error_code::bad_request, std::string("not JSON: ") + e.what());
    }
    if (!req.is_object()) refuse(error_code::bad_request, "a request must be a JSON object");
    if (const auto t = req.find("tag"); t != req.end()) tag = &*t;
    const auto o_it = req.find("op");
    if (o_it == req.end()) refuse(error_code::bad_request, "missing field 'op'");
    if (!o_it->is_string()) refuse(error_code::bad_request, "field 'op' must be a string");
    const std::string& op_name = o_it->get_ref<const std::string&>();
    const op o = parse_op(op_name);
    svc_.count_request(o);
    authenticate(req, o);
    run_op(svc_, o, op_name, req, reply_to(seq, tag));
  } catch (const refusal& r) {
    svc_.count_error(r.code);
    complete(seq, error_line(r.code, r.message, tag));
  }
}

void session::authenticate(const json& req, op o) {
  // TCP listeners: a "token" on the request, or an earlier successful auth
  // op on this connection.
  const auto t = req.find("token");
  if (opts_.token && !authenticated_) {
    const bool good = t != req.end() && t->is_string() && same_token(t->get_ref<const std::string&>(), *opts_.token);
    if (!good)
      refuse(error_code::not_allowed, t == req.end() ? "this listener needs a token: send {\"op\":\"auth\",\"token\":...} "
                                                       "first or a \"token\" field on each request"
                                                     : "wrong token");
    token_seen_ = true;
    if (o == op::auth) authenticated_ = true;
  } else if (t != req.end() && !t->is_string()) {
    refuse(error_code::bad_request, "field 'token' must be a string");
  }
}

reply_fn session::reply_to(std::uint64_t seq, const json* tag) {
  // A reply may come after the connection is gone (a waiting op): the
  // session is held weakly.
  std::optional<json> tag_copy;
  if (tag) tag_copy = *tag;
  return [self = weak_from_this(), seq, tag_copy = std::move(tag_copy)](op_reply r) {
    auto s = self.lock();
    if (!s) return;
    const json* t = tag_copy ? &*tag_copy : nullptr;
    if (r.ok) s->complete(seq, ok_line(std::move(r.result), t), r.subscribe_ms);
    else s->complete(seq, error_line(r.code, r.message, t));
  };
}

void session::fail(std::uint64_t seq, error_code code, std::string_view message, const json* tag) {
  const std::string_view c = to_string(code);
  svc_.count_error(c);
  complete(seq, error_line(c, message, tag));
}

bool session::wants_input(std::size_t unsent_elsewhere) const {
  if (input_ended_) return false;
  std::lock_guard lock(mu_);
  // Ready replies held behind a waiting one count too: they are memory the
  // client makes the server keep as surely as the waiting ones.
  return slots_.size() < opts_.max_pending_replies &&
         held_bytes_ + out_.size() + unsent_elsewhere < opts_.max_buffered_bytes;
}

std::size_t session::buffered_bytes() const {
  std::lock_guard lock(mu_);
  return held_bytes_ + out_.size();
}

std::string session::take_output() {
  std::lock_guard lock(mu_);
  std::string out;
  out.swap(out_);
  return out;
}

bool session::finished() const {
  if (!input_ended_) return false;
  std::lock_guard lock(mu_);
  return slots_.empty() && out_.empty() && stream_ms_ == 0;
}

std::size_t session::pending_replies() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

std::optional<std::chrono::steady_clock::time_point> session::next_stream_at() const {
  std::lock_guard lock(mu_);
  if (stream_ms_ == 0) return std::nullopt;
  return stream_next_;
}

bool session::stream_tick(std::chrono::steady_clock::time_point now) {
  std::int64_t interval = 0;
  std::uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    if (stream_ms_ == 0 || now < stream_next_) return false;
    interval = stream_ms_;
    seq = stream_seq_++;
    stream_next_ += std::chrono::milliseconds(interval);
    // A late tick (a busy front end) does not make a burst of catch-up lines.
    if (stream_next_ <= now) stream_next_ = now + std::chrono::milliseconds(interval);
  }
  // Built without the session lock: stats() takes the job server's locks.
  std::string line = stream_line(svc_.jobs().stats(), seq, interval);
  {
    std::lock_guard lock(mu_);
    if (stream_ms_ == 0) return false;  // unsubscribed meanwhile
    out_ += line;
    out_ += '\n';
  }
  notify_();
  return true;
}

}  // namespace promptly::server::protocol
