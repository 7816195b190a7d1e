// A fake resctrl tree for the tests of src/resctrl and of promptlyd's
// partitioning (tests/resctrl_test.cpp, tests/server_partition_test.cpp):
// a temporary directory laid out as the kernel lays out /sys/fs/resctrl
// (info/L3, info/MB, the default group's schemata and cpus_list). This
// machine has no RDT; the tree stands in for the kernel, and where the
// kernel would act on its own (a new group's files appear on mkdir and go
// on rmdir) the test does what it would, by hand or through
// fake_kernel_controller. Nothing else of the kernel is imitated: a
// cpus_list changes only when it is written.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "resctrl/resctrl.hpp"

namespace promptly_test {

inline void put(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

inline std::string get(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fake resctrl root: two L3 domains of 11 ways, MBA with 10% steps,
// 4 classes of service on L3 and 8 on MB (so 4 in all, the default included).
class fake_resctrl {
 public:
  fake_resctrl() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "promptly-resctrl-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
    put(root_ / "info" / "L3" / "cbm_mask", "7ff\n");
    put(root_ / "info" / "L3" / "min_cbm_bits", "1\n");
    put(root_ / "info" / "L3" / "num_closids", "4\n");
    put(root_ / "info" / "MB" / "min_bandwidth", "10\n");
    put(root_ / "info" / "MB" / "bandwidth_gran", "10\n");
    put(root_ / "info" / "MB" / "num_closids", "8\n");
    put(root_ / "info" / "last_cmd_status", "ok\n");
    put(root_ / "schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
    put(root_ / "cpus_list", "0-3\n");
    put(root_ / "tasks", "");
  }
  ~fake_resctrl() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  fake_resctrl(const fake_resctrl&) = delete;
  fake_resctrl& operator=(const fake_resctrl&) = delete;

  const std::filesystem::path& root() const { return root_; }
  // What the kernel does on mkdir of a group: the group's files appear.
  void kernel_populates(const std::string& group) const {
    put(root_ / group / "schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
    put(root_ / group / "cpus_list", "\n");
    put(root_ / group / "tasks", "");
  }
  // What the kernel does on rmdir: the files go with the directory.
  void kernel_empties(const std::string& group) const {
    for (const char* f : {"schemata", "cpus_list", "tasks"}) std::filesystem::remove(root_ / group / f);
  }

 private:
  std::filesystem::path root_;
};

// A controller on a fake tree whose mkdir and rmdir behave as the
// kernel's: for code that creates and removes groups itself.
class fake_kernel_controller : public promptly::resctrl::controller {
 public:
  explicit fake_kernel_controller(const fake_resctrl& fake) : controller(fake.root()), fake_(fake) {}
  void create_group(const std::string& group) override {
    controller::create_group(group);
    fake_.kernel_populates(group);
  }
  void remove_group(const std::string& group) override {
    // Only a group that exists, named as a group: anything else must fail
    // in the controller as it would.
    const bool plain = group.find('/') == std::string::npos && group != "." && group != "..";
    if (plain && !group.empty() && std::filesystem::is_directory(fake_.root() / group)) fake_.kernel_empties(group);
    controller::remove_group(group);
  }

 private:
  const fake_resctrl& fake_;
};

}  // namespace promptly_test
