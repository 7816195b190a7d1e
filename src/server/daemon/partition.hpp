// promptlyd's cache and memory-bandwidth partitioning between job classes
// (AMCilk Sec. 3.3 and 5.2: "the scheduler groups the cores assigned to
// each running job and calls Intel RDT to perform the allocation to the
// core groups"), through Linux resctrl (src/resctrl). docs/job-policies.md,
// "Cache and bandwidth partitioning"; the options are in docs/server.md.
//
// `--partition CLASS=SPEC` gives the jobs of CLASS (a job class of the
// server, or `default` for jobs without one) a resctrl class of service
// named promptly-CLASS whose schemata holds SPEC's L3 ways and memory
// bandwidth. The runtime's workers are pinned (worker_state::cpu); every
// interval the partition thread maps each worker that holds a core (its
// state is not "sleeping") to the class of the job whose pool it serves
// (map_cpus, a pure function) and rewrites a group's cpus_list when its CPU
// set changed. CPUs of idle workers, of workers serving no job and of
// unpartitioned classes belong to the default group.
//
// Threads: the partition thread (start) runs the rounds; apply, current
// and stop may be called from any thread (one mutex orders the rounds and
// the controller's writes). The round reads runtime::stats() and
// job_server::jobs() one after the other, so when a pool id is reused
// between the two a worker may count for the wrong job for one interval.
//
// Invariants
//  * Nothing here touches resctrl unless a partitioner or open_partitioning
//    is called; promptlyd calls them only for --partition.
//  * written_[g] is what group g's cpus_list holds as last written; a write
//    that fails leaves it as it was, so the next round writes again.
//  * Every group the constructor created is removed exactly once (stop, or
//    the constructor itself when a later step fails); its CPUs are first
//    given back to the default group.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <promptly/server/job_server.hpp>
#include <promptly/stats.hpp>

#include "resctrl/resctrl.hpp"

namespace promptly::server::daemon {

// The class name that stands for the jobs submitted without a class.
inline constexpr std::string_view default_class = "default";

// One --partition value.
struct partition_spec {
  std::string option;              // the value as given, for messages
  std::string job_class;           // CLASS
  resctrl::allocation allocation;  // SPEC: l3_mask and/or mb_percent
};

// Parses CLASS=SPEC where SPEC is PART[,PART] and PART is l3:WAYS[@FIRST]
// (WAYS contiguous L3 ways from way FIRST, default 0) or mb:PERCENT, each
// at most once ("interactive=l3:4@0,mb:50"). Throws std::invalid_argument
// "--partition 'VALUE': why" for anything else. The hardware's limits are
// checked by check_partitions.
[[nodiscard]] partition_spec parse_partition(const std::string& value);

// The resctrl group of a class: "promptly-CLASS".
[[nodiscard]] std::string partition_group(const std::string& job_class);

// "partition CLASS: resctrl group promptly-CLASS, schemata L3:0=f;1=f MB:0=50;1=50"
// (the schemata written, on one line), for promptlyd's start-up message.
[[nodiscard]] std::string describe_partition(const partition_spec& p, const resctrl::capabilities& caps);

// Checks the specs against the server's classes (known_classes plus
// default_class) and the hardware: every class known and partitioned once,
// every allocation valid under `caps` (resctrl::schemata_text), a class of
// service for each besides the default group's. Throws
// std::invalid_argument naming the offending --partition value.
void check_partitions(std::span<const partition_spec> specs, std::span<const std::string> known_classes,
                      const resctrl::capabilities& caps);

// The controller for --partition at `root`; throws std::runtime_error
// naming the root and saying that partitioning needs Linux resctrl (Intel
// RDT) when the root is missing or is not resctrl.
[[nodiscard]] std::unique_ptr<resctrl::controller> open_partitioning(const std::filesystem::path& root);

// The CPUs each group should hold (sorted), with every group of
// class_groups present (an empty vector: no CPU). A worker counts when it
// is not sleeping, is pinned (cpu >= 0) and serves the pool of a running
// job whose class (default_class for "") is in class_groups (class ->
// group). When workers outnumber CPUs, a CPU goes to the class of the
// lowest-index worker on it that holds a core, partitioned or not.
using group_cpus = std::map<std::string, std::vector<unsigned>>;
[[nodiscard]] group_cpus map_cpus(std::span<const worker_state> workers, std::span<const job_info> jobs,
                                  const std::map<std::string, std::string>& class_groups);

struct partitioner_options {
  std::chrono::milliseconds interval{10};
  // Called after a round that rewrote some cpus_list, with every group's
  // CPUs as written now (on the thread that ran the round; must not block).
  std::function<void(const group_cpus&)> on_change;
  // Where errors of the rounds and of stop go (default: stderr, prefixed
  // "promptlyd: "). A round's error is told once until it changes or the
  // writes succeed again.
  std::function<void(const std::string&)> log;
};

class partitioner {
 public:
  // Checks the specs (check_partitions), creates one group per spec and
  // writes its schemata. If a step fails it removes the groups it created
  // and rethrows (std::invalid_argument for a bad spec, std::runtime_error
  // for the file system). `ctl` must outlive the partitioner.
  partitioner(resctrl::controller& ctl, std::vector<partition_spec> specs, std::span<const std::string> known_classes,
              partitioner_options opts = {});
  ~partitioner();  // stop()
  partitioner(const partitioner&) = delete;
  partitioner& operator=(const partitioner&) = delete;

  // One round from these snapshots: map_cpus, then a cpus_list write per
  // group whose set changed, then the CPUs no group holds any more go back
  // to the default group. Errors are logged, never thrown.
  void apply(std::span<const worker_state> workers, std::span<const job_info> jobs);
  // Runs a round every interval on a thread of its own from rt.stats() and
  // srv.jobs(); both must outlive stop(). At most once.
  void start(const promptly::runtime& rt, const job_server& srv);
  // Stops the thread, gives every group's CPUs back to the default group
  // and removes the groups. Idempotent; errors are logged. True unless a
  // group could not be removed (it stays; the log names it).
  bool stop() noexcept;

  [[nodiscard]] const std::map<std::string, std::string>& class_groups() const noexcept { return class_groups_; }
  [[nodiscard]] group_cpus current() const;  // what each group's cpus_list holds as last written

 private:
  void say(const std::string& line) const noexcept;
  bool remove_groups_locked() noexcept;

  resctrl::controller& ctl_;
  partitioner_options opts_;
  std::map<std::string, std::string> class_groups_;

  mutable std::mutex apply_mu_;  // orders rounds, stop and the controller's writes
  group_cpus written_;           // under apply_mu_
  std::vector<std::string> created_;  // groups to remove; under apply_mu_
  std::string last_error_;            // the round error last told; under apply_mu_

  std::mutex thread_mu_;  // stopping_ and the thread's wait
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace promptly::server::daemon
