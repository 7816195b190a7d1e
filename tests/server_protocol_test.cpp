// Protocol version 1 (src/server/protocol/, docs/server.md) against an
// embedded job_server, without sockets: every op, every error code, reply
// order for pipelined requests, the line-length limit, malformed input,
// authentication, subscription. Replies are awaited through the session's
// notify callback (a condition variable), never by sleeping.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <promptly/promptly.hpp>
#include <promptly/server/builtin_programs.hpp>
#include <promptly/server/job_server.hpp>

#include "server/protocol/protocol.hpp"
#include "test_support.hpp"
#include "watchdog.hpp"

using namespace promptly::server;
using nlohmann::json;

namespace {

// A job that runs until the test opens its gate (or it is cancelled).
struct gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      std::lock_guard lock(m);
      open = true;
    }
    cv.notify_all();
  }
  json run(job_context& ctx) {
    std::unique_lock lock(m);
    // The bounded wait only lets the job notice cancellation (a job polls
    // job_context::cancelled at its cutoffs); the test never sleeps on it.
    while (!open && !ctx.cancelled()) cv.wait_for(lock, std::chrono::milliseconds(1));
    ctx.throw_if_cancelled();
    return "opened";
  }
};

// The test side of a connection: feeds bytes, collects reply lines.
class conn {
 public:
  explicit conn(protocol::service& svc, protocol::session_options o = {}) : sync_(std::make_shared<sync>()) {
    s_ = protocol::session::create(svc, std::move(o), [sy = sync_] {
      std::lock_guard lock(sy->m);
      sy->cv.notify_all();
    });
  }
  void send(std::string_view bytes) { s_->feed(bytes); }
  void line(const json& j) { send(j.dump() + "\n"); }
  // The next n lines, waiting for them (replies and stream lines).
  std::vector<json> take(std::size_t n) {
    std::vector<json> out;
    std::unique_lock lock(sync_->m);
    for (;;) {
      buf_ += s_->take_output();
      std::size_t at = 0, nl;
      while (out.size() < n && (nl = buf_.find('\n', at)) != std::string::npos) {
        out.push_back(json::parse(std::string_view(buf_).substr(at, nl - at)));
        at = nl + 1;
      }
      buf_.erase(0, at);
      if (out.size() == n) return out;
      sync_->cv.wait(lock);
    }
  }
  json one() { return take(1).front(); }
  json call(const json& j) {
    line(j);
    return one();
  }
  // Output available right now, without waiting.
  std::string ready_output() {
    buf_ += s_->take_output();
    return buf_;
  }
  protocol::session& session() { return *s_; }

 private:
  struct sync {
    std::mutex m;
    std::condition_variable cv;
  };
  std::shared_ptr<sync> sync_;
  std::shared_ptr<protocol::session> s_;
  std::string buf_;
};

std::string code_of(const json& r) { return r.at("error").at("code").get<std::string>(); }
json add_args_ok() { return {{"a", 1}, {"b", 2}}; }

class Protocol : public ::testing::Test {
 protected:
  Protocol() : rt_(make_config()), srv_(rt_, make_options()), svc_(srv_) {
    register_builtin_programs(srv_);
    srv_.register_program(
        "add", [](job_context& ctx) { return json(ctx.args()["a"].get<std::int64_t>() + ctx.args()["b"].get<std::int64_t>()); },
        arg_schema{}.integer("a").integer("b"), "a + b");
    srv_.register_program("gate", [this](job_context& ctx) { return gate_.run(ctx); }, arg_schema{}, "waits for the test");
    srv_.register_program("boom", [](job_context&) -> json { throw std::runtime_error("boom"); }, arg_schema{},
                          "always fails");
  }
  ~Protocol() override {
    gate_.release();
    srv_.drain(std::chrono::seconds(10));
  }
  static promptly::runtime_config make_config() {
    promptly::runtime_config c;
    c.workers = 2;
    return c;
  }
  static job_server_options make_options() {
    job_server_options o;
    o.max_running = 2;
    o.max_queued = 3;
    o.result_ttl = std::chrono::minutes(5);
    return o;
  }

  watchdog dog_{std::chrono::seconds(120), "server_protocol_test"};
  gate gate_;
  promptly::runtime rt_;
  job_server srv_;
  protocol::service svc_;
};

TEST_F(Protocol, VersionAndPrograms) {
  conn c(svc_);
  const json v = c.call({{"op", "version"}});
  EXPECT_TRUE(v["ok"].get<bool>());
  EXPECT_EQ(v["protocol"], 1);
  const json p = c.call({{"op", "programs"}});
  ASSERT_TRUE(p["ok"].get<bool>());
  std::vector<std::string> names;
  for (const auto& x : p["programs"]) names.push_back(x["name"].get<std::string>());
  for (const char* want : {"fib", "nqueens", "matmul", "cilksort", "bing", "stream", "add", "gate", "boom"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST_F(Protocol, SubmitWaitingRepliesWithResultAndTiming) {
  conn c(svc_);
  const json r = c.call({{"op", "submit"}, {"program", "add"}, {"args", {{"a", 2}, {"b", 40}}}, {"wait", true}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r;
  EXPECT_EQ(r["state"], "done");
  EXPECT_EQ(r["result"], 42);
  EXPECT_TRUE(r["id"].is_number_unsigned());
  for (const char* k : {"queued_us", "run_us", "flow_us"}) EXPECT_TRUE(r["timing"].contains(k)) << r;
  const json f = c.call({{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 20}}}, {"wait", true}});
  EXPECT_EQ(f["result"], 6765) << f;
}

TEST_F(Protocol, SubmitWithoutWaitThenWaitAndStatus) {
  conn c(svc_);
  const json r = c.call({{"op", "submit"}, {"program", "gate"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r;
  const std::string state = r["state"].get<std::string>();
  EXPECT_TRUE(state == "queued" || state == "running") << r;
  const auto id = r["id"].get<std::uint64_t>();
  const json s = c.call({{"op", "status"}, {"id", id}});
  EXPECT_EQ(s["id"], id);
  c.line({{"op", "wait"}, {"id", id}, {"tag", "w"}});
  gate_.release();
  const json w = c.one();
  EXPECT_EQ(w["state"], "done");
  EXPECT_EQ(w["result"], "opened");
  EXPECT_EQ(w["tag"], "w");
  EXPECT_EQ(c.call({{"op", "status"}, {"id", id}})["state"], "done");
}

TEST_F(Protocol, AJobThatThrowsFailsAlone) {
  conn c(svc_);
  const json r = c.call({{"op", "submit"}, {"program", "boom"}, {"wait", true}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r;
  EXPECT_EQ(r["state"], "failed");
  EXPECT_EQ(r["error"], "boom");
  EXPECT_EQ(c.call({{"op", "submit"}, {"program", "add"}, {"args", {{"a", 1}, {"b", 1}}}, {"wait", true}})["result"], 2);
}

TEST_F(Protocol, CancelQueuedRunningAndTerminal) {
  conn c(svc_);
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(c.call({{"op", "submit"}, {"program", "gate"}})["id"].get<std::uint64_t>());
  // max_running = 2: the third is queued.
  const json q = c.call({{"op", "cancel"}, {"id", ids[2]}});
  EXPECT_TRUE(q["cancelled"].get<bool>()) << q;
  EXPECT_EQ(q["state"], "cancelled");
  const json running = c.call({{"op", "cancel"}, {"id", ids[0]}});
  EXPECT_TRUE(running["cancelled"].get<bool>()) << running;
  EXPECT_EQ(c.call({{"op", "wait"}, {"id", ids[0]}})["state"], "cancelled");
  const json again = c.call({{"op", "cancel"}, {"id", ids[0]}});
  EXPECT_FALSE(again["cancelled"].get<bool>());
  gate_.release();
  EXPECT_EQ(c.call({{"op", "wait"}, {"id", ids[1]}})["state"], "done");
  const json jobs = c.call({{"op", "jobs"}});
  ASSERT_TRUE(jobs["jobs"].is_array());
  EXPECT_TRUE(jobs["jobs"].empty()) << jobs;
}

TEST_F(Protocol, StatsCountsJobs) {
  conn c(svc_);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(c.call({{"op", "submit"}, {"program", "add"}, {"args", {{"a", i}, {"b", 0}}}, {"wait", true}})["state"], "done");
  ASSERT_EQ(c.call({{"op", "submit"}, {"program", "boom"}, {"wait", true}})["state"], "failed");
  const json s = c.call({{"op", "stats"}});
  ASSERT_TRUE(s["ok"].get<bool>()) << s;
  EXPECT_EQ(s["submitted"], 4);
  EXPECT_EQ(s["done"], 3);
  EXPECT_EQ(s["failed"], 1);
  EXPECT_EQ(svc_.requests(protocol::op::submit), 4u);
  std::uint64_t hist = 0;
  for (const auto& [k, h] : svc_.histograms()->snapshot()) hist += h.count;
  EXPECT_EQ(hist, 4u);  // one flow-time observation per accepted job
}

TEST_F(Protocol, PeriodicTasks) {
  conn c(svc_);
  const json r = c.call({{"op", "submit_periodic"}, {"program", "add"}, {"args", {{"a", 2}, {"b", 3}}},
                         {"period_ms", 1.5}, {"count", 3}, {"class", "batch"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r;
  const std::uint64_t id = r["id"].get<std::uint64_t>();
  EXPECT_EQ(r["period_ms"], 1.5);
  EXPECT_EQ(r["count"], 3);
  json p;
  ASSERT_TRUE(wait_until([&] {
    p = c.call({{"op", "periodic"}, {"id", id}});
    return p["done"] == 3;
  })) << p;
  EXPECT_EQ(p["released"], 3);
  EXPECT_FALSE(p["active"].get<bool>());
  EXPECT_EQ(c.call({{"op", "status"}, {"id", p["last_job"]}})["result"], 5);
  const json again = c.call({{"op", "cancel_periodic"}, {"id", id}});
  EXPECT_FALSE(again["cancelled"].get<bool>()) << again;
  EXPECT_EQ(c.call({{"op", "stats"}})["periodic"][0]["id"], id);
  // Errors: a bad field is bad_request, a bad value bad_args, an unknown id unknown_job.
  EXPECT_EQ(code_of(c.call({{"op", "submit_periodic"}, {"program", "add"}, {"period_ms", "1"}})), "bad_request");
  EXPECT_EQ(code_of(c.call({{"op", "submit_periodic"}, {"program", "add"}})), "bad_request");
  EXPECT_EQ(code_of(c.call({{"op", "submit_periodic"}, {"program", "add"}, {"period_ms", 5}, {"count", -1}})), "bad_request");
  EXPECT_EQ(code_of(c.call({{"op", "submit_periodic"}, {"program", "add"}, {"args", add_args_ok()}, {"period_ms", 0.01}})),
            "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "submit_periodic"}, {"program", "nope"}, {"period_ms", 5}})), "unknown_program");
  EXPECT_EQ(code_of(c.call({{"op", "periodic"}, {"id", 999}})), "unknown_job");
  EXPECT_EQ(code_of(c.call({{"op", "cancel_periodic"}, {"id", 999}})), "unknown_job");
}

TEST_F(Protocol, BadRequests) {
  conn c(svc_);
  const std::vector<std::string> bad = {
      "not json",
      "{\"op\":\"version\"",                          // truncated JSON
      "[1,2,3]",                                      // not an object
      "{}",                                           // no op
      "{\"op\":5}",                                   // op not a string
      "{\"op\":\"status\"}",                          // missing id
      "{\"op\":\"status\",\"id\":-1}",                // negative id
      "{\"op\":\"status\",\"id\":\"7\"}",             // wrong type
      "{\"op\":\"status\",\"id\":1.5}",               // not an integer
      "{\"op\":\"submit\",\"program\":\"add\",\"args\":[1]}",
      "{\"op\":\"submit\",\"program\":7}",
      "{\"op\":\"submit\",\"program\":\"add\",\"wait\":\"yes\"}",
      "{\"op\":\"submit\",\"program\":\"add\",\"class\":3}",
      "{\"op\":\"submit\",\"program\":\"add\",\"elastic\":5}",
      "{\"op\":\"submit\",\"program\":\"add\",\"elastic\":{\"work_ms\":4,\"span_ms\":1,\"period_min_ms\":5}}",
      "{\"op\":\"submit\",\"program\":\"add\",\"elastic\":{\"work_ms\":\"4\",\"span_ms\":1,\"period_min_ms\":5,\"period_max_ms\":9}}",
      "{\"op\":\"submit\",\"program\":\"add\",\"elastic\":{\"work_ms\":4,\"span_ms\":1,\"period_min_ms\":5,\"period_max_ms\":9,\"deadline\":2}}",
      "{\"op\":\"version\",\"extra\":1}",             // unknown field
      "{\"op\":\"set_cores\",\"cores\":-2}",
      "{\"op\":\"subscribe\",\"interval_ms\":\"fast\"}",
      "{\"op\":\"version\",\"token\":5}",
      std::string(100, '[') + std::string(100, ']'),  // nested too deep
      "{\"op\":\"version\"}garbage",
      std::string("{\"op\":\"ver\xff\"}"),            // invalid UTF-8
  };
  for (const auto& b : bad) {
    c.send(b + "\n");
    const json r = c.one();
    EXPECT_FALSE(r["ok"].get<bool>()) << b;
    EXPECT_EQ(code_of(r), "bad_request") << b << " -> " << r;
  }
  // The connection goes on.
  EXPECT_TRUE(c.call({{"op", "version"}})["ok"].get<bool>());
}

TEST_F(Protocol, EveryOtherErrorCode) {
  conn c(svc_);
  EXPECT_EQ(code_of(c.call({{"op", "frobnicate"}})), "unknown_op");
  EXPECT_EQ(code_of(c.call({{"op", "submit"}, {"program", "nope"}})), "unknown_program");
  EXPECT_EQ(code_of(c.call({{"op", "submit"}, {"program", "add"}, {"args", {{"a", "x"}, {"b", 1}}}})), "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "submit"}, {"program", "add"}, {"args", {{"a", 1}}}})), "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "submit"}, {"program", "fib"}, {"args", {{"n", -1}}}})), "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "submit"}, {"program", "cilksort"}, {"args", {{"n", -5}}}})), "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "submit"}, {"program", "add"}, {"args", {{"a", 1}, {"b", 2}, {"c", 3}}}})),
            "bad_args");
  // Elastic parameters that break span <= work: bad_args naming the field; sound ones are accepted.
  const json add_args = {{"a", 1}, {"b", 2}};
  const json e = c.call({{"op", "submit"}, {"program", "add"}, {"args", add_args},
                         {"elastic", {{"work_ms", 4}, {"span_ms", 6}, {"period_min_ms", 5}, {"period_max_ms", 9}}}});
  EXPECT_EQ(code_of(e), "bad_args") << e;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("span_ms"), std::string::npos) << e;
  const json ok = c.call({{"op", "submit"}, {"program", "add"}, {"args", add_args}, {"wait", true},
                          {"elastic", {{"work_ms", 4}, {"span_ms", 1}, {"period_min_ms", 5}, {"period_max_ms", 9}}}});
  EXPECT_EQ(ok["state"], "done") << ok;
  EXPECT_EQ(code_of(c.call({{"op", "set_policy"}, {"policy", "no-such-policy"}})), "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "set_cores"}, {"cores", 1000}})), "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "subscribe"}, {"interval_ms", 1}})), "bad_args");
  EXPECT_EQ(code_of(c.call({{"op", "status"}, {"id", 999999}})), "unknown_job");
  EXPECT_EQ(code_of(c.call({{"op", "wait"}, {"id", 999999}})), "unknown_job");
  EXPECT_EQ(code_of(c.call({{"op", "cancel"}, {"id", 999999}})), "unknown_job");
  // Admission control: 2 running + 3 queued, then rejected.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.call({{"op", "submit"}, {"program", "gate"}})["ok"].get<bool>());
  const json r = c.call({{"op", "submit"}, {"program", "gate"}});
  EXPECT_EQ(code_of(r), "rejected") << r;
  gate_.release();
  srv_.stop_accepting();
  const json d = c.call({{"op", "submit"}, {"program", "add"}, {"args", {{"a", 1}, {"b", 1}}}});
  EXPECT_EQ(code_of(d), "rejected");
  EXPECT_NE(d["error"]["message"].get<std::string>().find("drain"), std::string::npos) << d;
}

TEST_F(Protocol, SetPolicyAndCores) {
  conn c(svc_);
  EXPECT_TRUE(c.call({{"op", "set_cores"}, {"cores", 1}})["ok"].get<bool>());
  EXPECT_EQ(c.call({{"op", "stats"}})["core_limit"], 1);
  EXPECT_TRUE(c.call({{"op", "set_cores"}, {"cores", 0}})["ok"].get<bool>());
  EXPECT_TRUE(c.call({{"op", "set_policy"}, {"policy", "oblivious"}})["ok"].get<bool>());
  EXPECT_EQ(c.call({{"op", "submit"}, {"program", "fib"}, {"args", {{"n", 15}}}, {"wait", true}})["result"], 610);
}

TEST_F(Protocol, TokenRequired) {
  protocol::session_options o;
  o.token = "0123456789abcdef-token";
  conn c(svc_, o);
  EXPECT_EQ(code_of(c.call({{"op", "version"}})), "not_allowed");
  EXPECT_EQ(code_of(c.call({{"op", "version"}, {"token", "wrong"}})), "not_allowed");
  EXPECT_EQ(code_of(c.call({{"op", "auth"}, {"token", "0123456789abcdef-tokeX"}})), "not_allowed");
  EXPECT_TRUE(c.call({{"op", "version"}, {"token", *o.token}})["ok"].get<bool>());
  EXPECT_EQ(code_of(c.call({{"op", "stats"}})), "not_allowed");  // a token on one request is for that request
  EXPECT_TRUE(c.call({{"op", "auth"}, {"token", *o.token}})["ok"].get<bool>());
  EXPECT_TRUE(c.call({{"op", "stats"}})["ok"].get<bool>());  // the connection is authenticated now
}

TEST_F(Protocol, PipelinedRepliesKeepRequestOrder) {
  conn c(svc_);
  std::string batch = json{{"op", "submit"}, {"program", "gate"}, {"wait", true}, {"tag", 0}}.dump() + "\n";
  for (int i = 1; i <= 200; ++i) batch += json{{"op", "version"}, {"tag", i}}.dump() + "\n";
  c.send(batch);
  // The waiting submit holds every reply behind it.
  EXPECT_EQ(c.ready_output(), "");
  EXPECT_EQ(c.session().pending_replies(), 201u);
  gate_.release();
  const auto replies = c.take(201);
  for (int i = 0; i <= 200; ++i) EXPECT_EQ(replies[i]["tag"], i);
  EXPECT_EQ(replies[0]["result"], "opened");
}

TEST_F(Protocol, ManyPipelinedRequestsInOneFeed) {
  conn c(svc_);
  const int n = under_asan || under_tsan ? 4000 : 20000;  // the sanitizer builds do a fifth
  std::string batch;
  for (int i = 0; i < n; ++i)
    batch += i % 2 ? json{{"op", "status"}, {"id", 424242}, {"tag", i}}.dump() + "\n"
                   : json{{"op", "version"}, {"tag", i}}.dump() + "\r\n\n";  // CRLF and blank lines are fine
  c.send(batch);
  const auto replies = c.take(n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(replies[i]["tag"], i);
    ASSERT_EQ(replies[i]["ok"].get<bool>(), i % 2 == 0);
  }
  EXPECT_EQ(c.session().requests(), static_cast<std::uint64_t>(n));
}

TEST_F(Protocol, LongLinesAreRefusedAndTheConnectionGoesOn) {
  conn c(svc_);
  // 2 MiB in 64 KiB pieces, then a newline and a good request.
  const std::string piece(64 * 1024, 'x');
  for (int i = 0; i < 32; ++i) c.send(piece);
  const json r = c.one();  // answered as soon as the limit is passed
  EXPECT_EQ(code_of(r), "bad_request");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("too long"), std::string::npos);
  c.send(piece + "\n" + json{{"op", "version"}, {"tag", "after"}}.dump() + "\n");
  EXPECT_EQ(c.one()["tag"], "after");
  // One line over the limit delivered at once.
  c.send(std::string(protocol::max_line_bytes + 1, ' ') + "\n");
  EXPECT_EQ(code_of(c.one()), "bad_request");
  // Exactly at the limit is a request.
  json at_limit{{"op", "version"}, {"tag", ""}};
  const std::size_t pad = protocol::max_line_bytes - at_limit.dump().size();
  at_limit["tag"] = std::string(pad, 'p');
  ASSERT_EQ(at_limit.dump().size(), protocol::max_line_bytes);
  c.line(at_limit);
  EXPECT_TRUE(c.one()["ok"].get<bool>());
}

TEST_F(Protocol, TruncatedLastLineAtEndOfInput) {
  conn c(svc_);
  c.send(json{{"op", "version"}}.dump() + "\n{\"op\":\"vers");
  EXPECT_TRUE(c.one()["ok"].get<bool>());
  c.session().end_input();
  const json r = c.one();
  EXPECT_EQ(code_of(r), "bad_request");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("truncated"), std::string::npos);
  EXPECT_TRUE(c.session().finished());
  EXPECT_FALSE(c.session().wants_input());
}

TEST_F(Protocol, HalfClosedInputStillGetsWaitingReplies) {
  conn c(svc_);
  c.line({{"op", "submit"}, {"program", "gate"}, {"wait", true}});
  c.session().end_input();
  EXPECT_FALSE(c.session().finished());
  gate_.release();
  EXPECT_EQ(c.one()["state"], "done");
  EXPECT_TRUE(c.session().finished());
}

TEST_F(Protocol, DisconnectedClientsJobsRunOn) {
  std::uint64_t id = 0;
  {
    conn c(svc_);
    c.line({{"op", "submit"}, {"program", "gate"}, {"wait", true}});
    id = srv_.jobs().front().id;
  }  // the session is gone while its job runs
  gate_.release();
  const job_info j = srv_.wait(id);
  EXPECT_EQ(j.state, job_state::done);
}

TEST_F(Protocol, SubscribeStreamsStatsLines) {
  conn c(svc_);
  const json r = c.call({{"op", "subscribe"}, {"interval_ms", 10}});
  EXPECT_TRUE(r["subscribed"].get<bool>());
  const auto first = c.session().next_stream_at();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(c.session().stream_tick(*first));
  const json s = c.one();
  EXPECT_EQ(s["stream"], "stats");
  EXPECT_EQ(s["seq"], 0);
  for (const char* k : {"submitted", "running", "queued", "cores_in_use", "flow", "jobs"})
    EXPECT_TRUE(s.contains(k)) << k << " in " << s;
  // Not due again before its interval.
  EXPECT_FALSE(c.session().stream_tick(*first));
  ASSERT_TRUE(c.session().stream_tick(*c.session().next_stream_at()));
  EXPECT_EQ(c.one()["seq"], 1);
  // Requests still work on a subscribed connection; unsubscribe ends the stream.
  EXPECT_TRUE(c.call({{"op", "version"}})["ok"].get<bool>());
  EXPECT_FALSE(c.call({{"op", "unsubscribe"}})["subscribed"].get<bool>());
  EXPECT_FALSE(c.session().next_stream_at().has_value());
}

}  // namespace
