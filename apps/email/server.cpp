#include "server.hpp"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

#include "huffman.hpp"
#include "latency_summary.hpp"
#include "mailbox.hpp"
#include "message_text.hpp"
#include "priorities.hpp"
#include "protocol.hpp"
#include "recent_samples.hpp"

namespace email {

namespace io = promptly::io;
namespace pt = promptly::typed;
using clock_type = std::chrono::steady_clock;

namespace {
// A DONE line that cannot be written within this time finds a client that stopped reading.
constexpr auto write_timeout = std::chrono::seconds(5);
}  // namespace

struct connection {
  explicit connection(io::descriptor d_) : d(std::move(d_)) {}
  io::descriptor d;                // closed when the loop and every request task let go of it
  std::string user;                // set by USER; read only by the connection's loop
  std::shared_ptr<mailbox> box;    // the user's mailbox
  std::uint64_t next_seq = 1;
  std::size_t in_flight = 0;       // its acknowledged requests not yet answered; under state::mutex
};

struct server::state {
  state(promptly::runtime& rt_, server_options o)
      : rt(rt_), opt(std::move(o)), listener(io::listener::tcp(opt.host, opt.port)), store(opt.capacity, opt.mailbox_bytes, opt.max_mailboxes) {}

  promptly::runtime& rt;
  const server_options opt;
  io::listener listener;
  std::stop_source stop;
  mail_store store;

  // Counters, compress times, the checkers' futures and the count of acknowledged requests not
  // yet answered; all under `mutex` (short sections, never across a wait).
  mutable std::mutex mutex;
  std::condition_variable answered;  // in_flight reached 0 (stop() waits on it from its own thread)
  server_counters counters;
  io::connection_limit connections{opt.max_connections};  // connection loops running
  apps::recent_samples compress_us;  // the last 65,536 compress tasks' times
  std::vector<promptly::future<void>> checkers;
  // Missed periods are counted against the schedule, not by the checkers, so that a checker
  // that never runs (starved by more urgent work) still shows its misses: each mailbox's
  // checker is due once per period from its start (or the last RESET).
  std::vector<clock_type::time_point> checker_starts;
  clock_type::time_point counting_since = clock_type::now();
  std::uint64_t checks = 0;  // periods a checker actually handled since counting_since

  // The schedule's periods since counting_since, over every checker.
  std::uint64_t due_periods_locked(clock_type::time_point now) const {
    std::uint64_t due = 0;
    for (auto t : checker_starts) {
      auto from = std::max(t, counting_since);
      if (now > from) due += static_cast<std::uint64_t>((now - from) / opt.period);
    }
    return due;
  }
  server_counters counters_locked() const {
    server_counters k = counters;
    k.periods = due_periods_locked(clock_type::now());
    k.missed_periods = k.periods > checks ? k.periods - checks : 0;
    return k;
  }

  template <class F>
  void update(F&& f) {
    std::lock_guard lock(mutex);
    f(counters);
  }
  // Counts a request of `conn` in flight, or names the limit it is refused at (counted as busy):
  // server_options::max_in_flight_per_connection or max_in_flight.
  std::optional<std::string> try_begin_request(connection& conn) {
    std::lock_guard lock(mutex);
    std::optional<std::string> refused;
    if (conn.in_flight >= opt.max_in_flight_per_connection)
      refused = std::to_string(conn.in_flight) + " requests of this connection are not answered yet (its limit); read the replies, then retry";
    else if (counters.in_flight >= opt.max_in_flight)
      refused = "the server has " + std::to_string(counters.in_flight) + " requests not answered yet (its limit); retry later";
    if (refused) {
      ++counters.busy;
      return refused;
    }
    ++conn.in_flight;
    ++counters.in_flight;
    return std::nullopt;
  }
  std::size_t in_flight_of(const connection& conn) const {
    std::lock_guard lock(mutex);
    return conn.in_flight;
  }
  // Counted before its DONE line is written, so a client that read DONE and then asks STATS sees
  // its request counted; in_flight drops only after the write (stop() waits for the reply).
  void count_done(std::uint64_t server_counters::*what) { update([&](server_counters& c) { ++(c.*what); }); }
  void end_request(connection& conn) {
    std::lock_guard lock(mutex);
    assert(conn.in_flight > 0 && counters.in_flight > 0 && "every end_request follows a try_begin_request that succeeded");
    --conn.in_flight;
    if (--counters.in_flight == 0) answered.notify_all();
  }
};

namespace {

using state = server::state;
using op_future = pt::future<int, archiving>;
using op_cell = pt::future_cell<int, archiving>;

// Writes one line; false if the client is gone (reset, closed, or not reading for 5 s).
bool write_line(state& s, connection& conn, std::string line) {
  line += '\n';
  try {
    io::write(conn.d, line, write_timeout).get();
    return true;
  } catch (const io::error&) {
    s.update([](server_counters& c) { ++c.write_failures; });
    return false;
  }
}

// ---- send --------------------------------------------------------------------------------

void send_task(ctx<sending>, std::shared_ptr<state> s, std::shared_ptr<connection> conn, std::uint64_t seq,
               std::string from, std::string to, std::string text) {
  std::string reply = "DONE " + std::to_string(seq);
  if (auto box = s->store.find(to)) {
    auto m = std::make_shared<message>(s->store.next_id(), std::move(from), std::move(text));
    reply += " SEND " + std::to_string(m->id);
    box->deliver(std::move(m));
  } else {
    reply += " ERR no such user '" + to + "'";
  }
  s->count_done(&server_counters::sends);
  write_line(*s, *conn, std::move(reply));
  s->end_request(*conn);
}

// ---- sort --------------------------------------------------------------------------------

struct sort_entry {
  std::uint64_t id;
  const std::string* from;
  std::size_t size;
};

// Merge sort that forks its halves (runs at the sorting level: work keeps its level).
template <class Less>
void merge_sort(std::span<sort_entry> a, std::span<sort_entry> tmp, const Less& less) {
  if (a.size() <= 16) {
    std::stable_sort(a.begin(), a.end(), less);
    return;
  }
  const std::size_t mid = a.size() / 2;
  (void)promptly::join([&] { merge_sort(a.first(mid), tmp.first(mid), less); },
                       [&] { merge_sort(a.subspan(mid), tmp.subspan(mid), less); });
  std::merge(a.begin(), a.begin() + mid, a.begin() + mid, a.end(), tmp.begin(), less);
  std::copy(tmp.begin(), tmp.begin() + a.size(), a.begin());
}

void sort_task(ctx<sorting>, std::shared_ptr<state> s, std::shared_ptr<connection> conn, std::uint64_t seq,
               std::shared_ptr<mailbox> box, sort_key key) {
  auto messages = box->snapshot();  // holds the messages (and so their headers) alive
  std::vector<sort_entry> v, tmp(messages.size());
  v.reserve(messages.size());
  for (const auto& m : messages) v.push_back({m->id, &m->from, m->size});
  switch (key) {
    case sort_key::date:
      merge_sort(v, tmp, [](const sort_entry& a, const sort_entry& b) { return a.id < b.id; });
      break;
    case sort_key::sender:
      merge_sort(v, tmp, [](const sort_entry& a, const sort_entry& b) {
        return *a.from != *b.from ? *a.from < *b.from : a.id < b.id;
      });
      break;
    case sort_key::size:
      merge_sort(v, tmp, [](const sort_entry& a, const sort_entry& b) {
        return a.size != b.size ? a.size < b.size : a.id < b.id;
      });
      break;
  }
  std::string reply = "DONE " + std::to_string(seq) + " SORT " + std::string(name_of(key)) + " " +
                      std::to_string(v.size());
  for (const auto& e : v) {
    reply += ' ';
    reply += std::to_string(e.id);
    reply += ':';
    reply += key == sort_key::date ? std::to_string(e.id) : key == sort_key::sender ? *e.from : std::to_string(e.size);
  }
  s->count_done(&server_counters::sorts);
  write_line(*s, *conn, std::move(reply));
  s->end_request(*conn);
}

// ---- print and compress: one message at a time through its cell --------------------------

struct print_order {
  std::shared_ptr<connection> conn;
  std::uint64_t seq;
};

// One print (order set) or compress (order empty) of `m`. The futures-and-state paper's
// coordination (Sec. 5.1): swap our own handle into the message's cell with a CAS, then touch
// the operation we displaced, so operations on one message run one at a time in CAS order.
int message_op(ctx<archiving> c, std::shared_ptr<state> s, std::shared_ptr<message> m, std::shared_ptr<op_cell> self,
               std::optional<print_order> print) {
  op_future mine = self->load();  // fcreate_into stored it before this task could start
  self->store({});                // the cell held our own handle: drop it so the task record can go
  op_future prev = m->last_op.load();
  while (!m->last_op.compare_exchange(prev, mine)) {
  }
  int status = 0;
  try {
    if (prev) c.touch(prev);  // message_op never throws, so this only waits
  } catch (...) {
    status = -1;
  }
  prev = {};
  std::string reply;  // a print's DONE line, written after the print is counted
  try {
    if (print) {
      if (m->compressed.load(std::memory_order_relaxed)) {  // relaxed: ordered by the chain
        m->body = huffman_decompress(m->body, m->size);
        m->compressed.store(false, std::memory_order_relaxed);
      }
      reply = "DONE " + std::to_string(print->seq) + " PRINT " + std::to_string(m->id) + " " + m->body;
    } else if (!m->compressed.load(std::memory_order_relaxed)) {
      m->body = huffman_compress(m->body);
      m->compressed.store(true, std::memory_order_relaxed);
      s->update([](server_counters& c) { ++c.messages_compressed; });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "email server: message %llu: %s\n", static_cast<unsigned long long>(m->id), e.what());
    status = -1;
    if (print) reply = "DONE " + std::to_string(print->seq) + " ERR " + e.what();
  }
  if (print) {
    s->count_done(&server_counters::prints);
    write_line(*s, *print->conn, std::move(reply));
    s->end_request(*print->conn);
  }
  return status;
}

template <class P>
op_future start_message_op(ctx<P> c, const std::shared_ptr<state>& s, std::shared_ptr<message> m,
                           std::optional<print_order> print) {
  auto self = std::make_shared<op_cell>();
  return pt::fcreate_into(c, *self, message_op, s, std::move(m), self, std::move(print));
}

void compress_task(ctx<archiving> c, std::shared_ptr<state> s, std::vector<std::shared_ptr<message>> chunk,
                   clock_type::time_point created) {
  std::vector<op_future> ops;
  ops.reserve(chunk.size());
  for (auto& m : chunk) ops.push_back(start_message_op(c, s, std::move(m), std::nullopt));
  for (auto& f : ops) c.touch(f);
  const double us = std::chrono::duration<double, std::micro>(clock_type::now() - created).count();
  std::lock_guard lock(s->mutex);
  ++s->counters.compress_tasks;
  s->compress_us.add(us);
}

// ---- the periodic check ------------------------------------------------------------------

void checker_task(ctx<checking> c, std::shared_ptr<state> s, std::shared_ptr<mailbox> box) {
  io::periodic_timer timer(s->opt.period);
  const auto stop = s->stop.get_token();
  for (;;) {
    std::uint64_t ticks = 0;
    try {
      ticks = timer.tick(stop).get();
    } catch (const io::cancelled&) {
      return;
    }
    (void)ticks;  // missed ticks are counted against the schedule (state::counters_locked)
    {
      std::lock_guard lock(s->mutex);
      ++s->checks;
    }
    auto todo = box->uncompressed();
    std::vector<pt::future<void, archiving>> tasks;
    for (std::size_t i = 0; i < todo.size(); i += s->opt.chunk) {
      std::vector<std::shared_ptr<message>> chunk(todo.begin() + static_cast<std::ptrdiff_t>(i),
                                                  todo.begin() + static_cast<std::ptrdiff_t>(std::min(todo.size(), i + s->opt.chunk)));
      tasks.push_back(pt::fcreate<archiving>(c, compress_task, s, std::move(chunk), clock_type::now()));
    }
    for (auto& t : tasks) c.touch(t);  // archiving is more urgent than checking: allowed
  }
}

// The STATS line: the counters and the compress-time percentiles.
std::string stats_json(const state& s) {
  server_counters k;
  std::vector<double> us;
  {
    std::lock_guard lock(s.mutex);
    k = s.counters_locked();
    us = s.compress_us.values();
  }
  const auto sum = summarize(std::move(us));
  auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"requests\": %llu, \"sends\": %llu, \"sorts\": %llu, \"prints\": %llu, \"errors\": %llu, "
                "\"compress_tasks\": %llu, \"messages_compressed\": %llu, \"periods\": %llu, "
                "\"missed_periods\": %llu, \"write_failures\": %llu, \"in_flight\": %llu, \"busy\": %llu, \"refused_connections\": %llu, "
                "\"timed_out_connections\": %llu, "
                "\"compress_us_mean\": %.1f, \"compress_us_p50\": %.1f, \"compress_us_p95\": %.1f, "
                "\"compress_us_p99\": %.1f, \"compress_us_max\": %.1f}",
                u(k.requests), u(k.sends), u(k.sorts), u(k.prints), u(k.errors), u(k.compress_tasks),
                u(k.messages_compressed), u(k.periods), u(k.missed_periods), u(k.write_failures), u(k.in_flight), u(k.busy), u(k.refused_connections),
                u(k.timed_out_connections),
                sum.mean, sum.p50, sum.p95, sum.p99, sum.max);
  return buf;
}

// ---- the client loop ---------------------------------------------------------------------

// Logs `conn` in as `name`; false (still logged in as before, if at all) when `name` has no
// mailbox and the store is full.
bool login(ctx<client_loop> c, const std::shared_ptr<state>& s, connection& conn, const std::string& name) {
  auto [box, created] = s->store.open(name, [&](mailbox& fresh) {
    const std::uint64_t salt = std::hash<std::string>{}(name);
    for (std::size_t k = 0; k < s->opt.seed_messages; ++k)
      fresh.deliver(std::make_shared<message>(s->store.next_id(), "postmaster", make_body("postmaster", k, s->opt.seed_bytes, salt)));
  });
  if (!box) return false;
  if (created) {
    auto checker = pt::fcreate<checking>(c, checker_task, s, box);
    std::lock_guard lock(s->mutex);
    s->checkers.push_back(checker.untyped());
    s->checker_starts.push_back(clock_type::now());
  }
  conn.user = name;
  conn.box = std::move(box);
  return true;
}

// Acknowledges the connection's next request and starts its task with `start(seq)`, or refuses
// it with "ERR busy" at an in-flight limit (the loop never waits for its requests to finish:
// they run at less urgent priorities). The ACK write is started first, so it reaches the client
// before the task's DONE (writes on one descriptor complete in the order they were started,
// docs/io.md).
template <class Start>
bool acknowledge_and_start(state& s, connection& conn, Start&& start) {
  if (auto refused = s.try_begin_request(conn)) return write_line(s, conn, "ERR busy: " + *refused);
  const auto seq = conn.next_seq++;
  std::string ack = "ACK " + std::to_string(seq) + "\n";
  auto written = io::write(conn.d, ack, write_timeout);
  start(seq);
  try {
    written.get();
    return true;
  } catch (const io::error&) {
    s.update([](server_counters& c) { ++c.write_failures; });
    return false;
  }
}

void connection_loop(ctx<client_loop> c, std::shared_ptr<state> s, std::shared_ptr<connection> conn) {
  // The loop's connection slot is given back when it returns, before `conn` is released (which
  // closes the socket once no request task holds it): a client that saw the end can reconnect.
  const io::connection_limit::slot held{&s->connections};
  io::line_reader lines(conn->d, s->opt.max_line);
  const auto stop = s->stop.get_token();
  auto refuse = [&](const std::string& why) {
    s->update([](server_counters& k) { ++k.errors; });
    return write_line(*s, *conn, "ERR " + why);
  };
  const bool timed = s->opt.idle_timeout.count() > 0;
  for (;;) {
    std::string line;
    try {
      // A fresh deadline per line: bytes trickled into one line do not extend it.
      line = lines.read_line(timed ? io::deadline(s->opt.idle_timeout) : io::deadline{}, stop).get();
    } catch (const io::timed_out&) {
      if (s->in_flight_of(*conn) > 0) continue;  // waiting for its replies, not idle
      s->update([](server_counters& k) { ++k.timed_out_connections; });
      write_line(*s, *conn, "ERR idle: no request for " + std::to_string(s->opt.idle_timeout.count()) +
                                " ms (the server's idle timeout); closing");
      return;
    } catch (const io::error& e) {
      if (e.errno_value() == EMSGSIZE && refuse("request longer than " + std::to_string(s->opt.max_line) + " bytes"))
        continue;
      return;  // end of file, reset, closed, cancelled by stop(): the connection is over
    }
    auto parsed = parse_request(line);
    if (auto* why = std::get_if<std::string>(&parsed)) {
      if (!refuse(*why)) return;
      continue;
    }
    request& r = std::get<request>(parsed);
    if ((r.what == verb::send || r.what == verb::sort || r.what == verb::print) && !conn->box) {
      if (!refuse("log in first: USER <name>")) return;
      continue;
    }
    s->update([](server_counters& k) { ++k.requests; });
    bool ok = true;
    switch (r.what) {
      case verb::user:
        if (!login(c, s, *conn, r.name)) {
          ok = refuse("no mailbox for '" + r.name + "' and the server holds " + std::to_string(s->store.max_boxes()) +
                      " mailboxes (its limit); log in as an existing user");
          break;
        }
        ok = write_line(*s, *conn, "OK " + conn->user + " " + std::to_string(conn->box->size()));
        break;
      case verb::send:
        if (r.text.size() > s->opt.mailbox_bytes) {
          ok = refuse("a message of " + std::to_string(r.text.size()) + " bytes does not fit a mailbox (" +
                      std::to_string(s->opt.mailbox_bytes) + " bytes)");
          break;
        }
        ok = acknowledge_and_start(*s, *conn, [&](std::uint64_t seq) {
          (void)pt::fcreate<sending>(c, send_task, s, conn, seq, conn->user, std::move(r.name), std::move(r.text));
        });
        break;
      case verb::sort:
        ok = acknowledge_and_start(*s, *conn, [&](std::uint64_t seq) {
          (void)pt::fcreate<sorting>(c, sort_task, s, conn, seq, conn->box, r.key);
        });
        break;
      case verb::print: {
        auto m = conn->box->at(r.index);
        if (!m) {
          ok = refuse("no message " + std::to_string(r.index) + " (the mailbox holds " + std::to_string(conn->box->size()) + ")");
          break;
        }
        ok = acknowledge_and_start(*s, *conn, [&](std::uint64_t seq) {
          (void)start_message_op(c, s, std::move(m), print_order{conn, seq});
        });
        break;
      }
      case verb::stats:
        ok = write_line(*s, *conn, stats_json(*s));
        break;
      case verb::reset: {
        {
          std::lock_guard lock(s->mutex);
          const auto in_flight = s->counters.in_flight;
          s->counters = server_counters{};
          s->counters.in_flight = in_flight;
          s->compress_us.clear();
          s->counting_since = clock_type::now();
          s->checks = 0;
        }
        ok = write_line(*s, *conn, "OK reset");
        break;
      }
      case verb::help:
        ok = write_line(*s, *conn, help_text);
        break;
      case verb::quit:
        write_line(*s, *conn, "BYE");
        return;
    }
    if (!ok) return;
  }
}

void accept_loop(ctx<client_loop> c, std::shared_ptr<state> s) {
  const auto stop = s->stop.get_token();
  std::vector<pt::future<void, client_loop>> connections;
  for (;;) {
    io::descriptor d;
    try {
      d = s->listener.accept({}, stop).get();
    } catch (const io::cancelled&) {
      break;
    } catch (const io::closed&) {
      break;
    } catch (const io::error& e) {  // EMFILE and the like: say so, wait a little, go on
      std::fprintf(stderr, "email server: accept: %s (retrying)\n", e.what());
      try {
        io::sleep_for(std::chrono::milliseconds(10), stop).get();
      } catch (const io::cancelled&) {
        break;
      }
      continue;
    }
    if (!s->connections.try_open()) {
      s->update([](server_counters& k) { ++k.refused_connections; });
      // Said before closing, as Redis does ("max number of clients reached"); a fresh socket
      // takes this short write at once.
      try {
        io::write(d, "ERR busy: the server has " + std::to_string(s->opt.max_connections) +
                         " connections open (its limit); try later\n", write_timeout).get();
      } catch (const io::error&) {
      }
      continue;  // `d` closes here
    }
    std::erase_if(connections, [](const auto& f) { return f.is_ready(); });
    connections.push_back(pt::fcreate<client_loop>(c, connection_loop, s, std::make_shared<connection>(std::move(d))));
  }
  for (auto& f : connections) c.touch(f);  // every loop ends: its reads take the stop token
}

}  // namespace

server::server(promptly::runtime& rt, server_options options) {
  if (options.chunk == 0) throw std::invalid_argument("email::server_options::chunk must be at least 1");
  if (options.capacity == 0) throw std::invalid_argument("email::server_options::capacity must be at least 1");
  if (options.seed_messages > options.capacity)
    throw std::invalid_argument("email::server_options::seed_messages must not exceed capacity");
  if (options.seed_bytes != 0 && options.seed_messages > options.mailbox_bytes / options.seed_bytes)  // (no overflow)
    throw std::invalid_argument("email::server_options::mailbox_bytes must hold the seed messages (seed_messages x seed_bytes)");
  if (options.period.count() <= 0) throw std::invalid_argument("email::server_options::period must be positive");
  if (options.max_in_flight_per_connection == 0 || options.max_in_flight == 0)
    throw std::invalid_argument("email::server_options::max_in_flight_per_connection and max_in_flight must be at least 1");
  if (options.max_connections == 0) throw std::invalid_argument("email::server_options::max_connections must be at least 1");
  if (options.max_mailboxes == 0) throw std::invalid_argument("email::server_options::max_mailboxes must be at least 1");
  if (options.idle_timeout.count() < 0)
    throw std::invalid_argument("email::server_options::idle_timeout must not be negative (0: no limit)");
  state_ = std::make_shared<state>(rt, std::move(options));
  accept_loop_ = pt::submit<order, client_loop>(rt, accept_loop, state_);
}

server::~server() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "email server: stop: %s\n", e.what());
  }
}

std::uint16_t server::port() const { return state_->listener.port(); }

void server::stop() {
  if (stopped_) return;
  stopped_ = true;
  state_->stop.request_stop();
  accept_loop_.get();  // the accept loop and, through it, every connection loop
  std::vector<promptly::future<void>> checkers;
  {
    std::lock_guard lock(state_->mutex);  // no loop runs any more: no checker is added after this
    checkers.swap(state_->checkers);
  }
  for (auto& f : checkers) f.get();
  std::unique_lock lock(state_->mutex);
  state_->answered.wait(lock, [&] { return state_->counters.in_flight == 0; });
}

std::string server::stats_json() const { return email::stats_json(*state_); }

server_counters server::counters() const {
  std::lock_guard lock(state_->mutex);
  return state_->counters_locked();
}

}  // namespace email
