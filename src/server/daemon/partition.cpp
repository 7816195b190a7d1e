// promptlyd's cache and memory-bandwidth partitioning between job classes
// (partition.hpp states the model, the threads and the invariants).
#include "server/daemon/partition.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <promptly/runtime.hpp>

namespace promptly::server::daemon {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const auto at = s.find(sep, from);
    out.push_back(s.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

}  // namespace

partition_spec parse_partition(const std::string& value) {
  const auto bad = [&](const std::string& why) { return std::invalid_argument("--partition '" + value + "': " + why); };
  const std::string form = "expected CLASS=SPEC, SPEC like l3:4@0,mb:50 (l3:WAYS[@FIRST] and/or mb:PERCENT)";
  const auto eq = value.find('=');
  if (eq == std::string::npos) throw bad(form);
  partition_spec p;
  p.option = value;
  p.job_class = value.substr(0, eq);
  const std::string spec = value.substr(eq + 1);
  if (p.job_class.empty()) throw bad("no CLASS before '='; " + form);
  if (spec.empty()) throw bad("no SPEC after '='; " + form);
  // A whole number: digits only (stoul would take a sign or blanks).
  const auto number = [&](const std::string& part, const std::string& s, const char* what) -> unsigned {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad("'" + part + "': " + what + " must be a whole number, not '" + s + "'");
    return static_cast<unsigned>(std::stoul(s));
  };
  for (const std::string& part : split(spec, ',')) {
    const auto colon = part.find(':');
    const std::string kind = lower(part.substr(0, colon));
    if (colon == std::string::npos || (kind != "l3" && kind != "mb"))
      throw bad("'" + part + "' is neither l3:WAYS[@FIRST] nor mb:PERCENT");
    const std::string arg = part.substr(colon + 1);
    if (kind == "l3") {
      if (p.allocation.l3_mask) throw bad("l3 is given twice");
      const auto at = arg.find('@');
      const unsigned ways = number(part, arg.substr(0, at), "WAYS");
      const unsigned first = at == std::string::npos ? 0 : number(part, arg.substr(at + 1), "FIRST");
      if (ways == 0) throw bad("'" + part + "' gives no cache way (WAYS >= 1)");
      try {
        p.allocation.l3_mask = resctrl::ways_mask(ways, first);
      } catch (const std::invalid_argument& e) {
        throw bad(e.what());
      }
    } else {
      if (p.allocation.mb_percent) throw bad("mb is given twice");
      const unsigned pct = number(part, arg, "PERCENT");
      if (pct < 1 || pct > 100) throw bad("'" + part + "': the memory-bandwidth percentage must be 1..100");
      p.allocation.mb_percent = pct;
    }
  }
  return p;
}

std::string partition_group(const std::string& job_class) { return "promptly-" + job_class; }

std::string describe_partition(const partition_spec& p, const resctrl::capabilities& caps) {
  std::string schemata = resctrl::schemata_text(caps, p.allocation);
  while (!schemata.empty() && schemata.back() == '\n') schemata.pop_back();
  std::replace(schemata.begin(), schemata.end(), '\n', ' ');
  return "partition " + p.job_class + ": resctrl group " + partition_group(p.job_class) + ", schemata " + schemata;
}

void check_partitions(std::span<const partition_spec> specs, std::span<const std::string> known_classes,
                      const resctrl::capabilities& caps) {
  std::vector<std::string> known(known_classes.begin(), known_classes.end());
  known.emplace_back(default_class);
  std::set<std::string> seen;
  std::size_t n = 0;
  for (const partition_spec& p : specs) {
    const auto bad = [&](const std::string& why) { return std::invalid_argument("--partition '" + p.option + "': " + why); };
    if (std::find(known.begin(), known.end(), p.job_class) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw bad("unknown job class '" + p.job_class + "' (the server's classes: " + list + ")");
    }
    if (!seen.insert(p.job_class).second) throw bad("class '" + p.job_class + "' is partitioned twice");
    try {
      (void)resctrl::schemata_text(caps, p.allocation);
    } catch (const std::invalid_argument& e) {
      throw bad(e.what());
    }
    ++n;
    // The default group holds one class of service of the hardware's.
    if (caps.closids > 0 && n + 1 > caps.closids)
      throw bad(std::to_string(n) + " partitioned classes need " + std::to_string(n + 1) +
                " classes of service with the default group; this resctrl has " + std::to_string(caps.closids));
  }
}

std::unique_ptr<resctrl::controller> open_partitioning(const std::filesystem::path& root) {
  try {
    return std::make_unique<resctrl::controller>(root);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("--partition needs Linux resctrl (Intel RDT cache and memory-bandwidth allocation) "
                             "mounted at " + root.string() + " (--resctrl-root): " + e.what());
  }
}

group_cpus map_cpus(std::span<const worker_state> workers, std::span<const job_info> jobs,
                    const std::map<std::string, std::string>& class_groups) {
  group_cpus out;
  for (const auto& [cls, group] : class_groups) out[group];
  // pool -> the job's class, for the running jobs.
  std::unordered_map<std::uint32_t, const std::string*> class_of_pool;
  static const std::string default_name(default_class);
  for (const job_info& j : jobs)
    if (j.state == job_state::running && j.pool) class_of_pool[*j.pool] = j.job_class.empty() ? &default_name : &j.job_class;
  std::set<int> claimed;  // CPUs decided by a lower-index worker
  for (const worker_state& w : workers) {
    if (w.state == "sleeping" || w.cpu < 0) continue;
    if (!claimed.insert(w.cpu).second) continue;
    const auto job = class_of_pool.find(w.serving);
    if (job == class_of_pool.end()) continue;  // serves no job: default group
    const auto group = class_groups.find(*job->second);
    if (group == class_groups.end()) continue;  // unpartitioned class: default group
    out[group->second].push_back(static_cast<unsigned>(w.cpu));
  }
  for (auto& [group, cpus] : out) std::sort(cpus.begin(), cpus.end());
  return out;
}

partitioner::partitioner(resctrl::controller& ctl, std::vector<partition_spec> specs,
                         std::span<const std::string> known_classes, partitioner_options opts)
    : ctl_(ctl), opts_(std::move(opts)) {
  check_partitions(specs, known_classes, ctl_.caps());
  std::lock_guard lock(apply_mu_);
  try {
    for (const partition_spec& p : specs) {
      const std::string group = partition_group(p.job_class);
      try {
        ctl_.create_group(group);
      } catch (const std::runtime_error& e) {
        // The likeliest cause on a real machine: a promptlyd that did not
        // shut down left it, or another server uses the name.
        throw std::runtime_error(std::string(e.what()) + " (for --partition '" + p.option + "'; if a promptlyd that " +
                                 "was killed left " + group + ", rmdir it)");
      }
      created_.push_back(group);
      class_groups_[p.job_class] = group;
      written_[group];  // a new group holds no CPU
      try {
        ctl_.set_allocation(group, p.allocation);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string(e.what()) + " (for --partition '" + p.option + "')");
      }
    }
  } catch (...) {
    (void)remove_groups_locked();
    throw;
  }
}

partitioner::~partitioner() { stop(); }

void partitioner::say(const std::string& line) const noexcept {
  try {
    if (opts_.log) {
      opts_.log(line);
      return;
    }
  } catch (...) {
  }
  std::fprintf(stderr, "promptlyd: %s\n", line.c_str());
}

void partitioner::apply(std::span<const worker_state> workers, std::span<const job_info> jobs) {
  std::lock_guard lock(apply_mu_);
  if (created_.empty()) return;  // stopped
  const group_cpus want = map_cpus(workers, jobs, class_groups_);
  std::string error;
  bool changed = false;
  std::vector<unsigned> dropped;
  for (const auto& [group, cpus] : want) {
    std::vector<unsigned>& had = written_[group];
    if (had == cpus) continue;
    try {
      ctl_.assign_cpus(group, cpus);
    } catch (const std::exception& e) {
      if (error.empty()) error = e.what();
      continue;  // written_ unchanged: the next round writes again
    }
    std::set_difference(had.begin(), had.end(), cpus.begin(), cpus.end(), std::back_inserter(dropped));
    had = cpus;
    changed = true;
  }
  // The dropped CPUs no group holds now go back to the default group.
  std::sort(dropped.begin(), dropped.end());
  std::vector<unsigned> release;
  for (const unsigned c : dropped) {
    bool held = false;
    for (const auto& [group, cpus] : written_) held = held || std::binary_search(cpus.begin(), cpus.end(), c);
    if (!held && (release.empty() || release.back() != c)) release.push_back(c);
  }
  try {
    ctl_.release_cpus(release);
  } catch (const std::exception& e) {
    if (error.empty()) error = e.what();
  }
  if (!error.empty() && error != last_error_) say("partitioning: " + error + " (retrying every round)");
  if (error.empty() && !last_error_.empty()) say("partitioning: cpus_list writes succeed again");
  last_error_ = error;
  if (changed && opts_.on_change) {
    try {
      opts_.on_change(written_);
    } catch (...) {
    }
  }
}

void partitioner::start(const promptly::runtime& rt, const job_server& srv) {
  if (thread_.joinable()) throw std::logic_error("promptlyd: the partition thread runs already");
  thread_ = std::thread([this, &rt, &srv] {
    std::unique_lock lock(thread_mu_);
    while (!stopping_) {
      lock.unlock();
      try {
        const runtime_stats rs = rt.stats();
        const std::vector<job_info> jobs = srv.jobs();
        apply(rs.worker_states, jobs);
      } catch (const std::exception& e) {
        say(std::string("partitioning: ") + e.what());
      }
      lock.lock();
      // The period of the rounds (a timer, not a synchronisation): stop()
      // wakes it at once.
      wake_.wait_for(lock, opts_.interval, [this] { return stopping_; });
    }
  });
}

group_cpus partitioner::current() const {
  std::lock_guard lock(apply_mu_);
  return written_;
}

bool partitioner::stop() noexcept {
  {
    std::lock_guard lock(thread_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(apply_mu_);
  return remove_groups_locked();
}

bool partitioner::remove_groups_locked() noexcept {
  bool all = true;
  for (const std::string& group : created_) {
    try {
      // Explicit, as in apply(): the kernel's rmdir would return them too.
      ctl_.release_cpus(written_[group]);
    } catch (const std::exception& e) {
      say(std::string("partitioning: ") + e.what());
    }
    try {
      ctl_.remove_group(group);
    } catch (const std::exception& e) {
      say(std::string("partitioning: ") + e.what());
      all = false;
    }
    written_.erase(group);
  }
  created_.clear();
  return all;
}

}  // namespace promptly::server::daemon
