// resctrl classes of service for job groups (src/resctrl), on a fake
// resctrl tree (tests/resctrl_fake.hpp: a temporary directory laid out as
// the kernel lays out /sys/fs/resctrl). This machine has no RDT; the tree
// stands in for the kernel, and where the kernel would act on its own
// (making a new group's files on mkdir) the test does what it would.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "resctrl/resctrl.hpp"
#include "resctrl_fake.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace promptly::resctrl;
using promptly_test::fake_kernel_controller;
using promptly_test::fake_resctrl;
using promptly_test::get;
using promptly_test::put;

TEST(Resctrl, FormatsMasksAndCpuLists) {
  EXPECT_EQ(ways_mask(4), 0xfu);
  EXPECT_EQ(ways_mask(3, 8), 0x700u);
  EXPECT_EQ(ways_mask(64), ~std::uint64_t{0});
  EXPECT_THROW((void)ways_mask(0), std::invalid_argument);
  EXPECT_THROW((void)ways_mask(8, 60), std::invalid_argument);
  const std::vector<unsigned> cpus{9, 0, 2, 1, 3, 6, 8, 2};
  EXPECT_EQ(cpu_list(cpus), "0-3,6,8-9");
  EXPECT_EQ(cpu_list(std::vector<unsigned>{5}), "5");
  EXPECT_EQ(cpu_list(std::vector<unsigned>{}), "");
}

TEST(Resctrl, ParsesCpuListsBack) {
  EXPECT_EQ(parse_cpu_list("0-3,6,8-9\n"), (std::vector<unsigned>{0, 1, 2, 3, 6, 8, 9}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<unsigned>{5}));
  EXPECT_EQ(parse_cpu_list("3,1,1-2"), (std::vector<unsigned>{1, 2, 3})) << "sorted, no duplicates";
  EXPECT_EQ(parse_cpu_list("\n"), (std::vector<unsigned>{}));
  EXPECT_EQ(parse_cpu_list(""), (std::vector<unsigned>{}));
  for (const unsigned n : {0u, 1u, 7u, 40u}) {
    std::vector<unsigned> v;
    for (unsigned c = 0; c < n; c += (c % 3 == 0 ? 1 : 2)) v.push_back(c);
    EXPECT_EQ(parse_cpu_list(cpu_list(v)), v) << cpu_list(v);
  }
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", ",1", "1-2-3", "+1", "1 2", "70000"}) {
    const std::string e = what_of<std::invalid_argument>([&] { (void)parse_cpu_list(bad); });
    EXPECT_NE(e.find(std::string("cpus_list '") + bad + "'"), std::string::npos) << e;
  }
}

TEST(Resctrl, ReadsTheCapabilitiesOfTheTree) {
  fake_resctrl fake;
  EXPECT_TRUE(available(fake.root()));
  controller c(fake.root());
  EXPECT_TRUE(c.caps().l3);
  EXPECT_EQ(c.caps().l3_full_mask, 0x7ffu);
  EXPECT_EQ(c.caps().l3_ways, 11u);
  EXPECT_EQ(c.caps().l3_domains, (std::vector<unsigned>{0, 1}));
  EXPECT_TRUE(c.caps().mb);
  EXPECT_EQ(c.caps().mb_min_percent, 10u);
  EXPECT_EQ(c.caps().mb_domains, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(c.caps().closids, 4u) << "the smaller of L3's and MB's";
}

TEST(Resctrl, AClassOfServicePerJobGroupWithWaysBandwidthAndCpus) {
  fake_resctrl fake;
  controller c(fake.root());
  c.create_group("interactive");
  ASSERT_TRUE(fs::is_directory(fake.root() / "interactive"));
  fake.kernel_populates("interactive");
  c.set_allocation("interactive", {.l3_mask = ways_mask(8, 3), .mb_percent = 90});
  EXPECT_EQ(get(fake.root() / "interactive" / "schemata"), "L3:0=7f8;1=7f8\nMB:0=90;1=90\n");
  c.set_allocation("interactive", {.mb_percent = 35});
  EXPECT_EQ(get(fake.root() / "interactive" / "schemata"), "MB:0=40;1=40\n") << "rounded up to the 10% granularity";
  const std::vector<unsigned> cores{3, 1, 2};
  c.assign_cpus("interactive", cores);
  EXPECT_EQ(get(fake.root() / "interactive" / "cpus_list"), "1-3\n");

  c.create_group("batch");
  fake.kernel_populates("batch");
  c.set_allocation("batch", {.l3_mask = ways_mask(3), .mb_percent = 10});
  EXPECT_EQ(get(fake.root() / "batch" / "schemata"), "L3:0=7;1=7\nMB:0=10;1=10\n");
  EXPECT_EQ(c.groups(), (std::vector<std::string>{"batch", "interactive"}));

  fake.kernel_empties("batch");
  c.remove_group("batch");
  EXPECT_FALSE(fs::exists(fake.root() / "batch"));
  EXPECT_EQ(c.groups(), (std::vector<std::string>{"interactive"}));
}

// CPUs leave a group for the default group explicitly: the kernel does it
// on its own for CPUs a group's new cpus_list drops, but a fake tree (and a
// reader of the default group's list) only sees what is written.
TEST(Resctrl, CpusGoBackToTheDefaultGroup) {
  fake_resctrl fake;
  put(fake.root() / "cpus_list", "0,4-7\n");
  fake_kernel_controller c(fake);
  c.create_group("g");
  EXPECT_TRUE(c.cpus("g").empty()) << "a new group holds no CPU";
  c.assign_cpus("g", std::vector<unsigned>{1, 2, 3});
  EXPECT_EQ(c.cpus("g"), (std::vector<unsigned>{1, 2, 3}));
  EXPECT_EQ(c.default_cpus(), (std::vector<unsigned>{0, 4, 5, 6, 7}));
  c.assign_cpus("g", std::vector<unsigned>{2});
  c.release_cpus(std::vector<unsigned>{3, 1});
  EXPECT_EQ(get(fake.root() / "cpus_list"), "0-1,3-7\n") << "the default group keeps its CPUs and gains these";
  EXPECT_EQ(c.cpus("g"), (std::vector<unsigned>{2}));
  const std::string before = get(fake.root() / "cpus_list");
  c.release_cpus(std::vector<unsigned>{});
  EXPECT_EQ(get(fake.root() / "cpus_list"), before) << "no CPU, no write";
  // A garbled list names the file; a missing group names the path.
  put(fake.root() / "g" / "cpus_list", "x\n");
  const std::string garbled = what_of<std::runtime_error>([&] { (void)c.cpus("g"); });
  EXPECT_NE(garbled.find("cpus_list 'x'"), std::string::npos) << garbled;
  EXPECT_NE(garbled.find((fake.root() / "g" / "cpus_list").string()), std::string::npos) << garbled;
  const std::string missing = what_of<std::runtime_error>([&] { (void)c.cpus("ghost"); });
  EXPECT_NE(missing.find("No such file or directory"), std::string::npos) << missing;
  c.remove_group("g");
  EXPECT_FALSE(fs::exists(fake.root() / "g"));
}

TEST(Resctrl, BadAllocationsAreNamed) {
  fake_resctrl fake;
  controller c(fake.root());
  c.create_group("g");
  fake.kernel_populates("g");
  const std::string before = get(fake.root() / "g" / "schemata");
  EXPECT_NE(what_of<std::invalid_argument>([&] { c.set_allocation("g", {.l3_mask = 0x1000}); }).find("outside the cache's 7ff"),
            std::string::npos);
  EXPECT_NE(what_of<std::invalid_argument>([&] { c.set_allocation("g", {.l3_mask = 0x5}); }).find("not contiguous"),
            std::string::npos);
  EXPECT_NE(what_of<std::invalid_argument>([&] { c.set_allocation("g", {.l3_mask = 0}); }).find("no cache way"),
            std::string::npos);
  EXPECT_NE(what_of<std::invalid_argument>([&] { c.set_allocation("g", {.mb_percent = 5}); }).find("5% is outside [10, 100]"),
            std::string::npos);
  EXPECT_NE(what_of<std::invalid_argument>([&] { c.set_allocation("g", {.mb_percent = 101}); }).find("outside"),
            std::string::npos);
  EXPECT_EQ(get(fake.root() / "g" / "schemata"), before) << "a refused allocation writes nothing";
  // Minimum ways, and a machine without MBA.
  put(fake.root() / "info" / "L3" / "min_cbm_bits", "2\n");
  fs::remove_all(fake.root() / "info" / "MB");
  controller strict(fake.root());
  EXPECT_NE(what_of<std::invalid_argument>([&] { strict.set_allocation("g", {.l3_mask = 0x1}); }).find("minimum 2 ways"),
            std::string::npos);
  EXPECT_NE(what_of<std::invalid_argument>([&] { strict.set_allocation("g", {.mb_percent = 50}); }).find("no memory-bandwidth"),
            std::string::npos);
}

TEST(Resctrl, BadGroupsAndFileSystemErrorsNameThePathAndErrno) {
  fake_resctrl fake;
  controller c(fake.root());
  for (const char* bad : {"", ".", "..", "a/b", "info", "mon_groups", "mon_data"})
    EXPECT_THROW(c.create_group(bad), std::invalid_argument) << "'" << bad << "'";
  // Writing to a group that does not exist: the path and ENOENT's text.
  const std::string missing = what_of<std::runtime_error>([&] { c.assign_cpus("ghost", std::vector<unsigned>{0}); });
  EXPECT_NE(missing.find((fake.root() / "ghost" / "cpus_list").string()), std::string::npos) << missing;
  EXPECT_NE(missing.find("No such file or directory"), std::string::npos) << missing;
  const std::string gone = what_of<std::runtime_error>([&] { c.remove_group("ghost"); });
  EXPECT_NE(gone.find("No such file or directory"), std::string::npos) << gone;
  c.create_group("twice");
  const std::string again = what_of<std::runtime_error>([&] { c.create_group("twice"); });
  EXPECT_NE(again.find("File exists"), std::string::npos) << again;
  // Every class of service in use: 4 in all, the default group holds one.
  c.create_group("third");
  c.create_group("fourth");
  const std::string full = what_of<std::runtime_error>([&] { c.create_group("fifth"); });
  EXPECT_NE(full.find("all 4 classes of service are in use"), std::string::npos) << full;
  // A refused write reports the kernel's last_cmd_status (a directory
  // where the file should be makes open fail; the status is read when a
  // write fails, so here only the errno text and path appear).
  fs::create_directories(fake.root() / "twice" / "schemata");
  const std::string refused = what_of<std::runtime_error>([&] { c.set_allocation("twice", {.mb_percent = 50}); });
  EXPECT_NE(refused.find((fake.root() / "twice" / "schemata").string()), std::string::npos) << refused;
  EXPECT_NE(refused.find("Is a directory"), std::string::npos) << refused;
}

TEST(Resctrl, AMissingOrForeignRootIsAClearErrorAtStartUp) {
  fake_resctrl fake;
  const fs::path nowhere = fake.root() / "not-mounted";
  EXPECT_FALSE(available(nowhere));
  const std::string missing = what_of<std::runtime_error>([&] { controller c(nowhere); });
  EXPECT_NE(missing.find(nowhere.string() + ": No such file or directory"), std::string::npos) << missing;
  EXPECT_NE(missing.find("mount -t resctrl"), std::string::npos) << missing;

  const fs::path plain = fake.root() / "plain";
  fs::create_directories(plain);
  EXPECT_FALSE(available(plain));
  const std::string foreign = what_of<std::runtime_error>([&] { controller c(plain); });
  EXPECT_NE(foreign.find("is not a resctrl file system"), std::string::npos) << foreign;

  put(fake.root() / "info" / "L3" / "cbm_mask", "zz\n");
  const std::string garbled = what_of<std::runtime_error>([&] { controller c(fake.root()); });
  EXPECT_NE(garbled.find("cbm_mask holds 'zz'"), std::string::npos) << garbled;
}

// This machine: resctrl is either absent (no RDT), which must be a clear
// error, or present, which must parse.
TEST(Resctrl, TheRealRootIsEitherUsableOrAClearError) {
  if (available(default_root)) {
    controller c;
    EXPECT_GT(c.caps().closids, 0u);
  } else {
    const std::string e = what_of<std::runtime_error>([] { controller c; });
    EXPECT_NE(e.find("/sys/fs/resctrl"), std::string::npos) << e;
  }
}
