// promptlyd's cache and memory-bandwidth partitioning between job classes
// (src/server/daemon/partition, docs/job-policies.md "Cache and bandwidth
// partitioning"): the --partition parser and its messages, the checks
// against the server's classes and the hardware, the pure mapping from
// workers and jobs to each group's CPUs (table-driven), and the partitioner
// on a fake resctrl tree (tests/resctrl_fake.hpp; this machine has no RDT):
// groups created with their schemata, cpus_list rewritten when cores move,
// CPUs given back to the default group, groups removed at stop; then live,
// with a pinned runtime, a job server and the partition thread; and
// promptlyd refusing --partition at start-up where there is no resctrl.
// Waits are on events (the partitioner's on_change, a job's latch, a
// child's exit), never sleeps.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <promptly/promptly.hpp>
#include <promptly/server/job_server.hpp>

#include "resctrl_fake.hpp"
#include "server/daemon/partition.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace promptly::server;
using namespace promptly::server::daemon;
using promptly::worker_state;
using promptly_test::fake_kernel_controller;
using promptly_test::fake_resctrl;
using promptly_test::get;
using promptly_test::put;

namespace {

const std::vector<std::string> server_classes{"interactive", "batch"};  // job_server_options' default classes

std::vector<unsigned> cpus(std::initializer_list<unsigned> l) { return l; }

worker_state worker(int cpu, unsigned serving, const char* state = "working") {
  worker_state w;
  w.cpu = cpu;
  w.serving = serving;
  w.state = state;
  return w;
}

job_info job(std::uint32_t pool, const char* cls, job_state state = job_state::running) {
  job_info j;
  j.pool = pool;
  j.job_class = cls;
  j.state = state;
  return j;
}

// A partitioner's log and on_change, recorded; waiters wake on each.
struct recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> log;
  std::vector<group_cpus> changes;

  partitioner_options options(std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
    partitioner_options o;
    o.interval = interval;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(mu);
      log.push_back(line);
      cv.notify_all();
    };
    o.on_change = [this](const group_cpus& g) {
      std::lock_guard lock(mu);
      changes.push_back(g);
      cv.notify_all();
    };
    return o;
  }
  // Waits until the latest change satisfies pred; false after the hang guard.
  template <class Pred>
  bool wait_change(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, hang_guard, [&] { return !changes.empty() && pred(changes.back()); });
  }
  std::size_t change_count() {
    std::lock_guard lock(mu);
    return changes.size();
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu);
    return log;
  }
};

}  // namespace

TEST(PartitionSpec, GoodValues) {
  struct row {
    std::string value, job_class;
    std::optional<std::uint64_t> l3;
    std::optional<unsigned> mb;
  };
  const std::vector<row> rows{
      {"interactive=l3:4@0,mb:50", "interactive", 0xf, 50},
      {"batch=l3:4", "batch", 0xf, std::nullopt},
      {"batch=l3:3@8", "batch", 0x700, std::nullopt},
      {"default=mb:10", "default", std::nullopt, 10},
      {"batch=mb:100,l3:1@10", "batch", 0x400, 100},
      {"interactive=L3:2@1,MB:20", "interactive", 0x6, 20},
  };
  for (const auto& r : rows) {
    const partition_spec p = parse_partition(r.value);
    EXPECT_EQ(p.option, r.value);
    EXPECT_EQ(p.job_class, r.job_class) << r.value;
    EXPECT_EQ(p.allocation.l3_mask, r.l3) << r.value;
    EXPECT_EQ(p.allocation.mb_percent, r.mb) << r.value;
  }
  EXPECT_EQ(partition_group("interactive"), "promptly-interactive");
}

TEST(PartitionSpec, BadValuesNameTheValueAndTheProblem) {
  const std::vector<std::pair<std::string, std::string>> rows{
      {"interactive", "expected CLASS=SPEC, SPEC like l3:4@0,mb:50"},
      {"=l3:4", "no CLASS before '='"},
      {"batch=", "no SPEC after '='"},
      {"batch=l2:4", "'l2:4' is neither l3:WAYS[@FIRST] nor mb:PERCENT"},
      {"batch=l3", "'l3' is neither"},
      {"batch=l3:4,", "'' is neither"},
      {"batch=l3:x", "'l3:x': WAYS must be a whole number, not 'x'"},
      {"batch=l3:-1", "WAYS must be a whole number, not '-1'"},
      {"batch=l3:4@", "FIRST must be a whole number, not ''"},
      {"batch=l3:0", "'l3:0' gives no cache way"},
      {"batch=l3:8@60", "do not fit a 64-bit mask"},
      {"batch=l3:4,l3:2", "l3 is given twice"},
      {"batch=mb:50,mb:60", "mb is given twice"},
      {"batch=mb:0", "'mb:0': the memory-bandwidth percentage must be 1..100"},
      {"batch=mb:101", "must be 1..100"},
      {"batch=mb:50%", "PERCENT must be a whole number, not '50%'"},
      {"batch=mb: 50", "not ' 50'"},
  };
  for (const auto& [value, why] : rows) {
    const std::string e = what_of<std::invalid_argument>([&v = value] { (void)parse_partition(v); });
    EXPECT_EQ(e.rfind("--partition '" + value + "': ", 0), 0u) << e;
    EXPECT_NE(e.find(why), std::string::npos) << value << " -> " << e;
  }
}

TEST(PartitionSpec, CheckedAgainstTheClassesAndTheHardware) {
  fake_resctrl fake;  // 11 L3 ways, MB from 10%, 4 classes of service in all
  promptly::resctrl::controller c(fake.root());
  const auto check = [&](std::vector<std::string> values, std::vector<std::string> known = server_classes) {
    std::vector<partition_spec> specs;
    for (const auto& v : values) specs.push_back(parse_partition(v));
    return what_of<std::invalid_argument>([&] { check_partitions(specs, known, c.caps()); });
  };
  EXPECT_EQ(check({"interactive=l3:8@3,mb:90", "batch=l3:3,mb:10", "default=mb:50"}), "(no exception)");
  const std::string unknown = check({"urgent=mb:50"});
  EXPECT_NE(unknown.find("--partition 'urgent=mb:50': unknown job class 'urgent' (the server's classes: interactive, "
                         "batch, default)"),
            std::string::npos)
      << unknown;
  EXPECT_NE(check({"batch=mb:50", "batch=l3:2"}).find("--partition 'batch=l3:2': class 'batch' is partitioned twice"),
            std::string::npos);
  const std::string ways = check({"batch=l3:12"});
  EXPECT_NE(ways.find("--partition 'batch=l3:12': "), std::string::npos) << ways;
  EXPECT_NE(ways.find("outside the cache's 7ff"), std::string::npos) << ways;
  EXPECT_NE(check({"batch=mb:5"}).find("5% is outside [10, 100]"), std::string::npos);
  const std::string full = check({"a=mb:10", "b=mb:10", "c=mb:10", "d=mb:10"}, {"a", "b", "c", "d"});
  EXPECT_NE(full.find("--partition 'd=mb:10': 4 partitioned classes need 5 classes of service"), std::string::npos)
      << full;
}

// The pure part: workers + jobs + class -> group  =>  group -> CPUs.
TEST(PartitionMapping, WorkersToTheGroupsOfTheirJobsClasses) {
  const std::map<std::string, std::string> two{{"interactive", "promptly-interactive"}, {"batch", "promptly-batch"}};
  const std::map<std::string, std::string> with_default{{"interactive", "promptly-interactive"},
                                                        {"default", "promptly-default"}};
  // Pools: 0 = a level (no job); 5 interactive, 6 batch, 7 no class, 8 a finished job.
  const std::vector<job_info> jobs{job(5, "interactive"), job(6, "batch"), job(7, ""),
                                   job(8, "interactive", job_state::done)};
  struct row {
    const char* what;
    std::vector<worker_state> workers;
    const std::map<std::string, std::string>* classes;
    group_cpus want;
  };
  const std::vector<row> rows{
      {"no worker holds a core", {worker(0, 5, "sleeping"), worker(1, 6, "sleeping")}, &two,
       {{"promptly-batch", {}}, {"promptly-interactive", {}}}},
      {"working and looking workers count",
       {worker(0, 5), worker(1, 5, "looking"), worker(2, 6), worker(3, 6, "sleeping")}, &two,
       {{"promptly-batch", cpus({2})}, {"promptly-interactive", cpus({0, 1})}}},
      {"a level, a job without class and a finished job's pool: the default group",
       {worker(0, 0), worker(1, 7), worker(2, 8), worker(3, 9)}, &two,
       {{"promptly-batch", {}}, {"promptly-interactive", {}}}},
      {"an unpartitioned class stays in the default group", {worker(3, 6), worker(2, 5)}, &with_default,
       {{"promptly-default", {}}, {"promptly-interactive", cpus({2})}}},
      {"'default' partitions the jobs without a class", {worker(0, 7), worker(1, 5), worker(2, 7, "looking")},
       &with_default, {{"promptly-default", cpus({0, 2})}, {"promptly-interactive", cpus({1})}}},
      {"unpinned workers (cpu -1) are left alone", {worker(-1, 5), worker(1, 6)}, &two,
       {{"promptly-batch", cpus({1})}, {"promptly-interactive", {}}}},
      {"a shared CPU goes to the lowest-index worker holding a core",
       {worker(0, 6, "sleeping"), worker(1, 5), worker(0, 5), worker(1, 6), worker(0, 6)}, &two,
       {{"promptly-batch", {}}, {"promptly-interactive", cpus({0, 1})}}},
      {"a shared CPU whose first holder serves no job stays default", {worker(0, 0, "looking"), worker(0, 5)}, &two,
       {{"promptly-batch", {}}, {"promptly-interactive", {}}}},
      {"sorted", {worker(7, 5), worker(3, 5), worker(5, 5)}, &two,
       {{"promptly-batch", {}}, {"promptly-interactive", cpus({3, 5, 7})}}},
  };
  for (const auto& r : rows) EXPECT_EQ(map_cpus(r.workers, jobs, *r.classes), r.want) << r.what;
  EXPECT_EQ(map_cpus(std::vector<worker_state>{worker(0, 5)}, std::vector<job_info>{}, two),
            (group_cpus{{"promptly-batch", {}}, {"promptly-interactive", {}}}))
      << "no job";
  job_info unpooled = job(5, "interactive");
  unpooled.pool.reset();
  EXPECT_EQ(map_cpus(std::vector<worker_state>{worker(0, 5)}, std::vector<job_info>{unpooled}, two),
            (group_cpus{{"promptly-batch", {}}, {"promptly-interactive", {}}}))
      << "a running job without a pool yet";
}

// The partitioner against a fake tree, one round at a time.
TEST(Partitioner, GroupsSchemataMovesAndRemovalOnAFakeTree) {
  fake_resctrl fake;
  put(fake.root() / "cpus_list", "8-9\n");  // the fake's default list changes only when written
  fake_kernel_controller ctl(fake);
  recorder rec;
  std::vector<partition_spec> specs{parse_partition("interactive=l3:8@3,mb:90"), parse_partition("batch=l3:3,mb:10")};
  std::optional<partitioner> p;
  p.emplace(ctl, specs, server_classes, rec.options());
  EXPECT_EQ(ctl.groups(), (std::vector<std::string>{"promptly-batch", "promptly-interactive"}));
  EXPECT_EQ(get(fake.root() / "promptly-interactive" / "schemata"), "L3:0=7f8;1=7f8\nMB:0=90;1=90\n");
  EXPECT_EQ(get(fake.root() / "promptly-batch" / "schemata"), "L3:0=7;1=7\nMB:0=10;1=10\n");
  EXPECT_EQ(p->class_groups(), (std::map<std::string, std::string>{{"batch", "promptly-batch"},
                                                                    {"interactive", "promptly-interactive"}}));

  const std::vector<job_info> jobs{job(5, "interactive"), job(6, "batch"), job(7, "")};
  // Round 1: interactive holds CPUs 0 and 1, batch 2; CPU 3 serves the job without class.
  p->apply(std::vector<worker_state>{worker(0, 5), worker(1, 5, "looking"), worker(2, 6), worker(3, 7)}, jobs);
  EXPECT_EQ(get(fake.root() / "promptly-interactive" / "cpus_list"), "0-1\n");
  EXPECT_EQ(get(fake.root() / "promptly-batch" / "cpus_list"), "2\n");
  EXPECT_EQ(get(fake.root() / "cpus_list"), "8-9\n") << "nothing returned yet";
  ASSERT_EQ(rec.change_count(), 1u);
  // Round 2, the same cores: nothing is written.
  put(fake.root() / "promptly-batch" / "cpus_list", "sentinel\n");
  p->apply(std::vector<worker_state>{worker(0, 5), worker(1, 5), worker(2, 6), worker(3, 7, "sleeping")}, jobs);
  EXPECT_EQ(get(fake.root() / "promptly-batch" / "cpus_list"), "sentinel\n") << "an unchanged set is not rewritten";
  EXPECT_EQ(rec.change_count(), 1u);
  put(fake.root() / "promptly-batch" / "cpus_list", "2\n");
  // Round 3: CPU 1 moves to batch, CPU 0 falls asleep: 0 goes back to the default group, 1 does not.
  p->apply(std::vector<worker_state>{worker(0, 5, "sleeping"), worker(1, 6), worker(2, 6), worker(3, 7)}, jobs);
  EXPECT_EQ(get(fake.root() / "promptly-interactive" / "cpus_list"), "\n");
  EXPECT_EQ(get(fake.root() / "promptly-batch" / "cpus_list"), "1-2\n");
  EXPECT_EQ(get(fake.root() / "cpus_list"), "0,8-9\n");
  EXPECT_EQ(p->current(), (group_cpus{{"promptly-batch", cpus({1, 2})}, {"promptly-interactive", {}}}));
  ASSERT_EQ(rec.change_count(), 2u);
  EXPECT_EQ(rec.changes.back(), p->current());
  // Round 4: the batch job ended (its pool serves no job now).
  p->apply(std::vector<worker_state>{worker(1, 6), worker(2, 6, "looking")}, std::vector<job_info>{jobs[0]});
  EXPECT_EQ(get(fake.root() / "promptly-batch" / "cpus_list"), "\n");
  EXPECT_EQ(get(fake.root() / "cpus_list"), "0-2,8-9\n");
  // Round 5: interactive takes CPU 3; then stop gives it back and removes both groups.
  p->apply(std::vector<worker_state>{worker(3, 5)}, jobs);
  EXPECT_EQ(get(fake.root() / "promptly-interactive" / "cpus_list"), "3\n");
  EXPECT_TRUE(p->stop());
  EXPECT_TRUE(ctl.groups().empty());
  EXPECT_FALSE(fs::exists(fake.root() / "promptly-interactive"));
  EXPECT_EQ(get(fake.root() / "cpus_list"), "0-3,8-9\n");
  EXPECT_TRUE(p->current().empty());
  p->apply(std::vector<worker_state>{worker(3, 5)}, jobs);  // after stop: nothing
  EXPECT_TRUE(ctl.groups().empty());
  EXPECT_TRUE(p->stop());  // idempotent
  p.reset();
  EXPECT_TRUE(rec.lines().empty()) << rec.lines().front();
}

TEST(Partitioner, AFailedWriteIsToldOnceAndRetried) {
  fake_resctrl fake;
  fake_kernel_controller ctl(fake);
  recorder rec;
  partitioner p(ctl, {parse_partition("interactive=mb:50")}, server_classes, rec.options());
  const fs::path list = fake.root() / "promptly-interactive" / "cpus_list";
  fs::remove(list);
  fs::create_directories(list);  // a write now fails (EISDIR)
  const std::vector<job_info> jobs{job(5, "interactive")};
  const std::vector<worker_state> one{worker(2, 5)};
  for (int round = 0; round < 3; ++round) p.apply(one, jobs);
  ASSERT_EQ(rec.lines().size(), 1u) << "the same error is told once";
  EXPECT_NE(rec.lines()[0].find(list.string()), std::string::npos) << rec.lines()[0];
  EXPECT_NE(rec.lines()[0].find("Is a directory"), std::string::npos) << rec.lines()[0];
  EXPECT_EQ(rec.change_count(), 0u);
  fs::remove(list);
  put(list, "\n");
  p.apply(one, jobs);
  EXPECT_EQ(get(list), "2\n") << "the next round writes again";
  ASSERT_EQ(rec.lines().size(), 2u);
  EXPECT_NE(rec.lines()[1].find("succeed again"), std::string::npos) << rec.lines()[1];
  // A group that cannot be removed stays, named in the log; stop says so.
  put(fake.root() / "promptly-interactive" / "stray", "");
  EXPECT_FALSE(p.stop());
  ASSERT_EQ(rec.lines().size(), 3u);
  EXPECT_NE(rec.lines()[2].find("cannot remove class of service " + (fake.root() / "promptly-interactive").string()),
            std::string::npos)
      << rec.lines()[2];
  EXPECT_EQ(ctl.groups(), (std::vector<std::string>{"promptly-interactive"}));
  EXPECT_TRUE(p.stop()) << "nothing left to remove";
}

TEST(Partitioner, AFailedStartUpRemovesTheGroupsItMade) {
  fake_resctrl fake;
  fake_kernel_controller ctl(fake);
  fs::create_directories(fake.root() / "promptly-batch");  // left by a promptlyd that was killed
  std::vector<partition_spec> specs{parse_partition("interactive=mb:50"), parse_partition("batch=mb:10")};
  const std::string e = what_of<std::runtime_error>([&] { partitioner p(ctl, specs, server_classes); });
  EXPECT_NE(e.find("File exists"), std::string::npos) << e;
  EXPECT_NE(e.find("--partition 'batch=mb:10'"), std::string::npos) << e;
  EXPECT_NE(e.find("rmdir it"), std::string::npos) << e;
  EXPECT_EQ(ctl.groups(), (std::vector<std::string>{"promptly-batch"})) << "interactive removed, the stale one left";
  // A spec the hardware refuses: nothing is created at all.
  fs::remove(fake.root() / "promptly-batch");
  const std::string refused =
      what_of<std::invalid_argument>([&] { partitioner p(ctl, {parse_partition("batch=l3:12")}, server_classes); });
  EXPECT_NE(refused.find("--partition 'batch=l3:12'"), std::string::npos) << refused;
  EXPECT_TRUE(ctl.groups().empty());
}

TEST(Partitioner, ARootThatIsNotResctrlIsAClearErrorAtStartUp) {
  fake_resctrl fake;
  const fs::path plain = fake.root() / "plain";
  fs::create_directories(plain);
  for (const fs::path& root : {plain, fake.root() / "missing"}) {
    const std::string e = what_of<std::runtime_error>([&] { (void)open_partitioning(root); });
    EXPECT_NE(e.find("--partition needs Linux resctrl (Intel RDT"), std::string::npos) << e;
    EXPECT_NE(e.find("mounted at " + root.string() + " (--resctrl-root)"), std::string::npos) << e;
  }
  EXPECT_NE(what_of<std::runtime_error>([&] { (void)open_partitioning(plain); }).find("is not a resctrl file system"),
            std::string::npos);
  EXPECT_NE(what_of<std::runtime_error>([&] { (void)open_partitioning(fake.root() / "missing"); })
                .find("No such file or directory"),
            std::string::npos);
  EXPECT_NO_THROW((void)open_partitioning(fake.root()));
}

// pin_workers: worker i on the i-th CPU of the affinity mask, reported in
// worker_state::cpu; not pinned: -1.
TEST(Partitioner, PinnedWorkersReportTheirCpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> mask;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) mask.push_back(c);
  promptly::runtime_config cfg;
  cfg.workers = 3;
  cfg.pin_workers = true;
  {
    promptly::runtime rt(cfg);
    const auto ws = rt.stats().worker_states;
    ASSERT_EQ(ws.size(), 3u);
    for (std::size_t i = 0; i < ws.size(); ++i) EXPECT_EQ(ws[i].cpu, mask[i % mask.size()]) << "worker " << i;
  }
  cfg.pin_workers = false;
  promptly::runtime rt(cfg);
  for (const auto& w : rt.stats().worker_states) EXPECT_EQ(w.cpu, -1);
}

// Live: a pinned runtime, the job server and the partition thread. A job of
// class interactive holds its worker's core until released; the thread
// puts that CPU in promptly-interactive, and takes it out once the job ended.
TEST(Partitioner, ThePartitionThreadFollowsTheCoresOfARunningJob) {
  promptly::runtime_config cfg;
  cfg.workers = 2;
  cfg.pin_workers = true;
  promptly::runtime rt(cfg);
  for (const auto& w : rt.stats().worker_states) ASSERT_GE(w.cpu, 0) << "pinning failed here";
  job_server srv(rt);
  std::mutex mu;
  std::condition_variable cv;
  int job_cpu = -1;
  bool release = false;
  srv.register_program("hold", [&](job_context&) -> json {
    std::unique_lock lock(mu);
    job_cpu = sched_getcpu();  // pinned: the worker's CPU
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return job_cpu;
  });

  fake_resctrl fake;
  put(fake.root() / "cpus_list", "\n");
  fake_kernel_controller ctl(fake);
  recorder rec;
  std::optional<partitioner> p;
  p.emplace(ctl, std::vector<partition_spec>{parse_partition("interactive=l3:4,mb:50")}, server_classes,
            rec.options(std::chrono::milliseconds(1)));
  p->start(rt, srv);
  const fs::path list = fake.root() / "promptly-interactive" / "cpus_list";

  auto h = srv.submit("hold", json::object(), {.job_class = "interactive"});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, hang_guard, [&] { return job_cpu >= 0; }));
  }
  const auto cpu = static_cast<unsigned>(job_cpu);
  ASSERT_TRUE(rec.wait_change([&](const group_cpus& g) {
    const auto& v = g.at("promptly-interactive");
    return std::find(v.begin(), v.end(), cpu) != v.end();
  })) << "the job's CPU never reached promptly-interactive";
  // The job's worker holds its core until released: no round takes it out.
  const auto held = promptly::resctrl::parse_cpu_list(get(list));
  EXPECT_NE(std::find(held.begin(), held.end(), cpu), held.end()) << get(list);

  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_EQ(h.wait().result, job_cpu);
  ASSERT_TRUE(rec.wait_change([](const group_cpus& g) { return g.at("promptly-interactive").empty(); }))
      << "the group kept the CPUs of a job that ended";
  const auto back = promptly::resctrl::parse_cpu_list(get(fake.root() / "cpus_list"));
  EXPECT_NE(std::find(back.begin(), back.end(), cpu), back.end()) << "the CPU went back to the default group";
  p->stop();
  EXPECT_TRUE(ctl.groups().empty());
  EXPECT_TRUE(rec.lines().empty()) << rec.lines().front();
}

#ifdef PROMPTLYD_PATH
// promptlyd itself (as tests/server_daemon_test.cpp starts it): --partition
// where there is no resctrl fails at start-up, exit 2, naming the root.
TEST(Partitioner, PromptlydRefusesPartitioningWithoutResctrl) {
  fake_resctrl fake;
  const fs::path plain = fake.root() / "plain";
  fs::create_directories(plain);
  const std::string sock = (fake.root() / "d.sock").string();
  int err[2];
  ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(err[1], STDERR_FILENO);
    const std::string root = plain.string();
    ::execl(PROMPTLYD_PATH, PROMPTLYD_PATH, "--socket", sock.c_str(), "--workers", "1", "--partition",
            "interactive=l3:4@0,mb:50", "--resctrl-root", root.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(err[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(err[0]);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 2);
  EXPECT_NE(text.find("promptlyd: --partition needs Linux resctrl (Intel RDT"), std::string::npos) << text;
  EXPECT_NE(text.find(plain.string() + " is not a resctrl file system"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(sock)) << "it stopped before listening";
}
#endif
