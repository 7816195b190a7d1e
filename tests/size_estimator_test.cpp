// Job size estimates (src/server/jobs/size_estimator.hpp): hints checked,
// argument buckets, learning converging, the estimate's sources and errors,
// and the job server and protocol taking `size_hint`.
#include "server/jobs/size_estimator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <promptly/promptly.hpp>
#include <promptly/server/job_server.hpp>

#include "server/protocol/protocol.hpp"

namespace {

namespace srv = promptly::server;
using srv::json;
using srv::detail::size_estimate;
using srv::detail::size_estimator;
using srv::detail::size_source;

srv::error_code code_of_hint(double ms) {
  try {
    (void)size_estimator::checked_hint_ms(ms);
  } catch (const srv::error& e) {
    EXPECT_NE(std::string(e.what()).find("size_hint"), std::string::npos) << e.what();
    return e.code();
  }
  return srv::error_code::not_allowed;  // "accepted"
}

TEST(SizeEstimator, BadHintsAreRefusedWithBadArgs) {
  for (double bad : {-1.0, 0.0, -0.0, std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), 1e12, size_estimator::max_hint_ms * 1.01})
    EXPECT_EQ(code_of_hint(bad), srv::error_code::bad_args) << bad;
  for (double good : {1e-6, 0.5, 12.0, size_estimator::max_hint_ms})
    EXPECT_EQ(code_of_hint(good), srv::error_code::not_allowed) << good;
}

TEST(SizeEstimator, ArgumentBucketsTable) {
  struct row {
    json args;
    std::string bucket;
  };
  const std::vector<row> rows = {
      {json::object(), ""},
      {{{"n", 20}}, "n~4"},
      {{{"n", 31}}, "n~4"},
      {{{"n", 32}}, "n~5"},
      {{{"n", 0}}, "n~0"},
      {{{"x", -3.5}}, "x~-1"},
      {{{"b", true}, {"mode", "fast"}}, "b=true,mode=fast"},
      {{{"v", json::array({1, 2, 3})}}, "v#1"},
      {json::array({1}), ""},
  };
  for (const row& r : rows) EXPECT_EQ(size_estimator::argument_bucket(r.args), r.bucket) << r.args;
}

TEST(SizeEstimator, SourcesInOrderHintBucketProgramPrior) {
  size_estimator e;
  const json small = {{"n", 10}}, large = {{"n", 40}};
  size_estimate s = e.estimate("fib", small, nullptr);
  EXPECT_EQ(s.source, size_source::prior);
  EXPECT_DOUBLE_EQ(s.expected_s, size_estimator::default_prior_s);
  const double hint = 3.0;
  s = e.estimate("fib", small, &hint);
  EXPECT_EQ(s.source, size_source::hint);
  EXPECT_DOUBLE_EQ(s.expected_s, 0.003);
  e.observe(e.estimate("fib", small, nullptr), 0.002);
  EXPECT_EQ(e.estimate("fib", small, nullptr).source, size_source::bucket);
  EXPECT_DOUBLE_EQ(e.estimate("fib", small, nullptr).expected_s, 0.002);
  EXPECT_EQ(e.estimate("fib", large, nullptr).source, size_source::program);
  // An unseen program: the mean of every completed job.
  s = e.estimate("sort", json::object(), nullptr);
  EXPECT_EQ(s.source, size_source::prior);
  EXPECT_DOUBLE_EQ(s.expected_s, 0.002);
  // Bad measurements are not learned.
  e.observe(s, std::nan(""));
  e.observe(s, -1);
  EXPECT_EQ(e.stats()["jobs"], 1u);
}

TEST(SizeEstimator, LearningConvergesPerBucket) {
  size_estimator e;
  // Two buckets of one program, sizes 1 ms and 16 ms with +-20% noise.
  std::uint64_t x = 12345;
  auto noise = [&] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return 0.8 + 0.4 * static_cast<double>(x >> 11) / 9007199254740992.0;
  };
  std::vector<double> err_first, err_last;
  for (int i = 0; i < 200; ++i) {
    for (const auto& [n, size] : {std::pair{8, 0.001}, std::pair{128, 0.016}}) {
      const size_estimate s = e.estimate("job", {{"n", n}}, nullptr);
      const double actual = size * noise();
      (i < 3 ? err_first : err_last).push_back(std::fabs(s.expected_s - actual) / actual);
      if (i >= 190) {
        EXPECT_EQ(s.source, size_source::bucket);
        EXPECT_NEAR(s.expected_s, size, 0.1 * size) << n;
      }
      e.observe(s, actual);
    }
  }
  // The first estimates (the prior, then the other bucket's) are far off; the last within the noise.
  double last = 0;
  for (double v : err_last) last += v;
  last /= static_cast<double>(err_last.size());
  EXPECT_LT(last, 0.15);
  EXPECT_GT(err_first.front(), 1.0);
  const json st = e.stats();
  EXPECT_EQ(st["jobs"], 400u);
  EXPECT_EQ(st["buckets"], 2u);
  EXPECT_GT(st["sources"]["bucket"]["jobs"].get<std::uint64_t>(), 390u);
}

TEST(SizeEstimator, ErrorsAreReportedPerSource) {
  size_estimator e;
  const double four_x = 8.0, quarter = 0.5;  // ms, for jobs of 2 ms
  e.observe(e.estimate("p", json::object(), &four_x), 0.002);
  e.observe(e.estimate("p", json::object(), &quarter), 0.002);
  const json h = e.stats()["sources"]["hint"];
  EXPECT_EQ(h["jobs"], 2u);
  EXPECT_NEAR(h["mean_abs_log2_error"].get<double>(), 2.0, 1e-9);  // 4x either way
  EXPECT_NEAR(h["mean_abs_rel_error"].get<double>(), (3.0 + 0.75) / 2, 1e-9);
  // The totals keep the sign the absolute errors drop: 8.5 ms expected, 4 ms measured.
  EXPECT_NEAR(h["expected_s"].get<double>(), 0.0085, 1e-12);
  EXPECT_NEAR(h["measured_s"].get<double>(), 0.004, 1e-12);
}

TEST(SizeEstimator, JobServerRefusesBadHintsAndLearnsUnderSerpt) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.policy = "serpt";
  promptly::runtime rt(cfg);
  srv::job_server s(rt);
  s.register_program("sum", [](srv::job_context& ctx) {
    long long t = 0;
    for (long long i = 0; i < ctx.args()["n"].get<long long>(); ++i) t += i;
    return json(t);
  }, srv::arg_schema{}.integer("n", {.min = 0, .max = 1'000'000}));
  for (double bad : {-5.0, std::nan(""), 1e300}) {
    try {
      (void)s.submit("sum", {{"n", 1}}, {.size_hint_ms = bad});
      ADD_FAILURE() << bad;
    } catch (const srv::error& e) {
      EXPECT_EQ(e.code(), srv::error_code::bad_args) << bad;
    }
  }
  EXPECT_EQ(s.stats().submitted, 0u);
  EXPECT_EQ(s.submit("sum", {{"n", 1000}}, {.size_hint_ms = 0.5}).wait().state, srv::job_state::done);
  EXPECT_EQ(s.submit("sum", {{"n", 1000}}).wait().state, srv::job_state::done);
  const json st = srv::to_json(s.stats())["size_estimates"];
  EXPECT_EQ(st["jobs"], 2u) << st;
  EXPECT_EQ(st["sources"]["hint"]["jobs"], 1u) << st;
  // The first job's measured work was learned: the second ran with its bucket's mean.
  EXPECT_EQ(st["sources"]["bucket"]["jobs"], 1u) << st;
  EXPECT_EQ(rt.policy(), "serpt");
  s.set_policy("equi");
  EXPECT_EQ(rt.policy(), "equi");
  s.set_policy("serpt");
  EXPECT_EQ(rt.policy(), "serpt");
}

// The protocol's submit op: `size_hint` reaches the server, a bad one is bad_args.
class session_lines {
 public:
  explicit session_lines(srv::protocol::service& svc) : sync_(std::make_shared<sync>()) {
    s_ = srv::protocol::session::create(svc, {}, [sy = sync_] {
      std::lock_guard lock(sy->m);
      sy->cv.notify_all();
    });
  }
  json call(const json& j) {
    s_->feed(j.dump() + "\n");
    std::unique_lock lock(sync_->m);
    for (;;) {
      buf_ += s_->take_output();
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        json r = json::parse(buf_.substr(0, nl));
        buf_.erase(0, nl + 1);
        return r;
      }
      // Bounded: a reply that never comes fails here, not as a hang.
      if (sync_->cv.wait_for(lock, std::chrono::seconds(10)) == std::cv_status::timeout) return json{{"timeout", true}};
    }
  }

 private:
  struct sync {
    std::mutex m;
    std::condition_variable cv;
  };
  std::shared_ptr<sync> sync_;
  std::shared_ptr<srv::protocol::session> s_;
  std::string buf_;
};

TEST(SizeEstimator, ProtocolSubmitTakesSizeHint) {
  promptly::runtime_config cfg;
  cfg.workers = 1;
  promptly::runtime rt(cfg);
  srv::job_server s(rt);
  s.register_program("one", [](srv::job_context&) { return json(1); });
  srv::protocol::service svc(s);
  session_lines c(svc);
  const json ok = c.call({{"op", "submit"}, {"program", "one"}, {"size_hint", 2.5}, {"wait", true}});
  EXPECT_TRUE(ok.value("ok", false)) << ok;
  for (const json& bad : {json(-1), json(0), json(1e300), json("NaN"), json(nullptr)}) {
    const json r = c.call({{"op", "submit"}, {"program", "one"}, {"size_hint", bad}});
    EXPECT_FALSE(r.value("ok", true)) << bad;
    EXPECT_EQ(r["error"]["code"], "bad_args") << bad << " -> " << r;
  }
  s.drain(std::chrono::seconds(10));
}

}  // namespace
