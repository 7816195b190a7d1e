// Cache and memory-bandwidth partitioning between job groups through Linux
// resctrl (Intel RDT: CAT for last-level-cache ways, MBA for memory
// bandwidth), as AMCilk does through Intel's RDT package (AMCilk Sec. 3.3:
// "the AMCilk scheduler groups the cores assigned to each running job and
// calls Intel RDT to perform the allocation to the core groups"; Sec. 5.2
// and 6.4 for what it buys).
//
// One class of service (a resctrl group: a directory under the root) per
// job group; its schemata file holds the L3 capacity bitmask per cache
// domain and the MB percentage per memory domain; its cpus_list the CPUs
// of the cores the group's jobs hold. The kernel's interface is
// Documentation/arch/x86/resctrl.rst; the root is configurable so the code
// runs against a fake tree in tests (tests/resctrl_test.cpp).
//
// Errors: every failing file-system call throws std::runtime_error naming
// the path and the errno text (and the kernel's info/last_cmd_status when it
// has one); bad arguments throw std::invalid_argument naming the value.
//
// Invariants
//  * A controller only exists for a root that passed the resctrl check
//    (`available`); its capabilities are read once at construction.
//  * Groups are created and removed only under the root; names are single
//    path components that are not the kernel's own entries.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace promptly::resctrl {

inline const std::filesystem::path default_root = "/sys/fs/resctrl";

// True if `root` looks like a mounted resctrl: a directory with the
// default group's schemata and cpus_list files and an info/ directory
// describing L3 or MB allocation. Never throws.
[[nodiscard]] bool available(const std::filesystem::path& root = default_root) noexcept;

// What the hardware offers, from info/ and the default group's schemata.
struct capabilities {
  bool l3 = false;                   // cache allocation (info/L3)
  std::uint64_t l3_full_mask = 0;    // info/L3/cbm_mask: every way
  unsigned l3_ways = 0;              // bits in the full mask
  unsigned l3_min_ways = 1;          // info/L3/min_cbm_bits
  std::vector<unsigned> l3_domains;  // cache ids of the L3 line
  bool mb = false;                   // bandwidth allocation (info/MB)
  unsigned mb_min_percent = 0;       // info/MB/min_bandwidth
  unsigned mb_granularity = 1;       // info/MB/bandwidth_gran
  std::vector<unsigned> mb_domains;  // ids of the MB line
  unsigned closids = 0;              // classes of service, the default group included (min over L3 and MB)
};

// What a class of service gets: L3 ways as a capacity bitmask (the same in
// every cache domain) and a memory-bandwidth percentage (every domain).
// Unset fields are left as they are.
struct allocation {
  std::optional<std::uint64_t> l3_mask;
  std::optional<unsigned> mb_percent;
};

// A contiguous mask of `ways` ways starting at way `first` (CAT needs
// contiguous masks). Throws std::invalid_argument for ways == 0 or a mask
// past 64 bits.
[[nodiscard]] std::uint64_t ways_mask(unsigned ways, unsigned first = 0);

// "0-3,6,8-9" for CPUs {0,1,2,3,6,8,9} (the kernel's cpus_list format);
// duplicates are dropped, order does not matter.
[[nodiscard]] std::string cpu_list(std::span<const unsigned> cpus);
// The inverse: the sorted CPUs of a cpus_list text ("0-3,6\n"; blanks and
// the newline are ignored, "" is no CPU). Throws std::invalid_argument
// naming the text for anything else.
[[nodiscard]] std::vector<unsigned> parse_cpu_list(const std::string& text);

// The schemata text for `a` under `caps` ("L3:0=f0;1=f0\nMB:0=50;1=50\n").
// Throws std::invalid_argument naming the problem: a mask outside the full
// mask, not contiguous, with fewer than the minimum ways; a percentage
// outside [min, 100]; a resource the hardware lacks. Percentages are
// rounded up to the granularity, as the kernel does.
[[nodiscard]] std::string schemata_text(const capabilities& caps, const allocation& a);

class controller {
 public:
  // Throws std::runtime_error naming the root if it is missing (with the
  // errno text) or is not resctrl.
  explicit controller(std::filesystem::path root = default_root);
  // Virtual only so a test can stand in for the kernel's side of mkdir and
  // rmdir on a fake tree (a group's files appear and go with it).
  virtual ~controller() = default;
  controller(const controller&) = delete;
  controller& operator=(const controller&) = delete;

  const capabilities& caps() const noexcept { return caps_; }
  const std::filesystem::path& root() const noexcept { return root_; }

  // Creates the class of service `group` (mkdir root/group). Throws
  // std::invalid_argument for a bad name, std::runtime_error when every
  // class of service is in use or mkdir fails (path and errno text).
  virtual void create_group(const std::string& group);
  // Removes it (rmdir root/group); its CPUs return to the default group.
  virtual void remove_group(const std::string& group);
  // The group's classes of service that exist now (directories under the
  // root that are not the kernel's own), sorted.
  [[nodiscard]] std::vector<std::string> groups() const;

  // Writes the group's schemata (schemata_text).
  void set_allocation(const std::string& group, const allocation& a);
  // Writes the group's cpus_list: these CPUs (the cores its jobs hold) are
  // now in this class of service and leave any other.
  void assign_cpus(const std::string& group, std::span<const unsigned> cpus);
  // The CPUs in the group's cpus_list now, sorted.
  [[nodiscard]] std::vector<unsigned> cpus(const std::string& group) const;
  // The CPUs of the default group (the root's cpus_list), sorted.
  [[nodiscard]] std::vector<unsigned> default_cpus() const;
  // Gives `cpus` back to the default group: writes the root's cpus_list
  // with its CPUs and these (the kernel refuses a default-group list that
  // drops a CPU, and moves the added ones out of any other group). The
  // kernel already returns the CPUs a group's new cpus_list drops, so on a
  // real resctrl this only makes the hand-back explicit; no CPU: no write.
  void release_cpus(std::span<const unsigned> cpus);

 private:
  std::filesystem::path group_path(const std::string& group) const;
  std::vector<unsigned> read_cpus(const std::filesystem::path& file) const;
  void write_file(const std::filesystem::path& file, const std::string& text) const;

  std::filesystem::path root_;
  capabilities caps_;
};

}  // namespace promptly::resctrl
