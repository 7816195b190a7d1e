// Linux resctrl classes of service for job groups (resctrl.hpp states the
// interface, the error rules and the invariants).
#include "resctrl/resctrl.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace promptly::resctrl {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

[[noreturn]] void fail(const fs::path& path, const std::string& what, int err) {
  throw std::runtime_error("promptly resctrl: " + what + " " + path.string() + ": " + errno_text(err));
}

// The whole file, or nullopt if it does not exist; other errors throw.
std::optional<std::string> read_if_exists(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail(path, "cannot open", errno);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail(path, "cannot read", err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\n") - first + 1);
}

unsigned read_unsigned(const fs::path& path, unsigned fallback) {
  const auto text = read_if_exists(path);
  if (!text) return fallback;
  try {
    return static_cast<unsigned>(std::stoul(trim(*text)));
  } catch (const std::exception&) {
    throw std::runtime_error("promptly resctrl: " + path.string() + " holds '" + trim(*text) +
                             "', not a number (is this a resctrl file system?)");
  }
}

// The domain ids of line `resource` of a schemata text ("  L3:0=7ff;1=7ff").
std::vector<unsigned> domains_of(const std::string& schemata, const std::string& resource) {
  std::istringstream in(schemata);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.rfind(resource + ":", 0) != 0) continue;
    std::vector<unsigned> ids;
    std::istringstream items(line.substr(resource.size() + 1));
    std::string item;
    while (std::getline(items, item, ';')) {
      const auto eq = item.find('=');
      if (eq == std::string::npos) continue;
      try {
        ids.push_back(static_cast<unsigned>(std::stoul(trim(item.substr(0, eq)))));
      } catch (const std::exception&) {
        throw std::runtime_error("promptly resctrl: schemata line '" + line + "' has a domain that is not a number");
      }
    }
    return ids;
  }
  return {};
}

bool is_dir(const fs::path& p) noexcept {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const fs::path& p) noexcept {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Entries of a resctrl root that are the kernel's, never a class of service.
bool kernel_entry(const std::string& name) { return name == "info" || name == "mon_groups" || name == "mon_data"; }

}  // namespace

bool available(const fs::path& root) noexcept {
  return is_dir(root) && is_file(root / "schemata") && is_file(root / "cpus_list") &&
         (is_dir(root / "info" / "L3") || is_dir(root / "info" / "MB"));
}

std::uint64_t ways_mask(unsigned ways, unsigned first) {
  if (ways == 0) throw std::invalid_argument("promptly resctrl: a cache mask needs at least one way");
  if (first >= 64 || ways > 64 - first)
    throw std::invalid_argument("promptly resctrl: ways " + std::to_string(first) + ".." +
                                std::to_string(first + ways - 1) + " do not fit a 64-bit mask");
  const std::uint64_t bits = ways == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << ways) - 1;
  return bits << first;
}

std::string cpu_list(std::span<const unsigned> cpus) {
  std::vector<unsigned> v(cpus.begin(), cpus.end());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

std::vector<unsigned> parse_cpu_list(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("promptly resctrl: cpus_list '" + trim(text) + "' " + why);
  };
  // A CPU number: digits only (stoul would accept a sign and blanks), and
  // below a bound far over any kernel's NR_CPUS, so a range stays small.
  constexpr unsigned cpu_bound = 1u << 16;
  const auto number = [&](const std::string& s) -> unsigned {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad("has '" + s + "' where a CPU number belongs");
    const auto n = static_cast<unsigned>(std::stoul(s));
    if (n >= cpu_bound) throw bad("has CPU " + s + ", past " + std::to_string(cpu_bound - 1));
    return n;
  };
  std::vector<unsigned> out;
  const std::string body = trim(text);
  if (body.empty()) return out;
  std::istringstream items(body);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(item));
      continue;
    }
    const unsigned lo = number(item.substr(0, dash));
    const unsigned hi = number(item.substr(dash + 1));
    if (hi < lo) throw bad("has the descending range " + item);
    for (unsigned c = lo; c <= hi; ++c) out.push_back(c);
  }
  if (body.back() == ',') throw bad("ends with a comma");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string schemata_text(const capabilities& caps, const allocation& a) {
  std::string out;
  auto hex = [](std::uint64_t m) {
    std::ostringstream o;
    o << std::hex << m;
    return o.str();
  };
  if (a.l3_mask) {
    const std::uint64_t m = *a.l3_mask;
    if (!caps.l3) throw std::invalid_argument("promptly resctrl: this resctrl has no L3 cache allocation (no info/L3)");
    if (m == 0) throw std::invalid_argument("promptly resctrl: L3 mask 0 gives no cache way");
    if ((m & ~caps.l3_full_mask) != 0)
      throw std::invalid_argument("promptly resctrl: L3 mask " + hex(m) + " has ways outside the cache's " +
                                  hex(caps.l3_full_mask));
    const std::uint64_t shifted = m >> std::countr_zero(m);
    if ((shifted & (shifted + 1)) != 0)
      throw std::invalid_argument("promptly resctrl: L3 mask " + hex(m) + " is not contiguous (CAT needs one run of ways)");
    if (static_cast<unsigned>(std::popcount(m)) < caps.l3_min_ways)
      throw std::invalid_argument("promptly resctrl: L3 mask " + hex(m) + " has fewer than the minimum " +
                                  std::to_string(caps.l3_min_ways) + " ways");
    if (caps.l3_domains.empty())
      throw std::invalid_argument("promptly resctrl: the default group's schemata has no L3 line to take domains from");
    out += "L3:";
    for (std::size_t i = 0; i < caps.l3_domains.size(); ++i) {
      if (i > 0) out += ';';
      out += std::to_string(caps.l3_domains[i]);
      out += '=';
      out += hex(m);
    }
    out += '\n';
  }
  if (a.mb_percent) {
    unsigned pct = *a.mb_percent;
    if (!caps.mb) throw std::invalid_argument("promptly resctrl: this resctrl has no memory-bandwidth allocation (no info/MB)");
    if (pct > 100 || pct < caps.mb_min_percent)
      throw std::invalid_argument("promptly resctrl: memory bandwidth " + std::to_string(pct) + "% is outside [" +
                                  std::to_string(caps.mb_min_percent) + ", 100]");
    const unsigned g = std::max(1u, caps.mb_granularity);
    pct = std::min(100u, (pct + g - 1) / g * g);
    if (caps.mb_domains.empty())
      throw std::invalid_argument("promptly resctrl: the default group's schemata has no MB line to take domains from");
    out += "MB:";
    for (std::size_t i = 0; i < caps.mb_domains.size(); ++i) {
      if (i > 0) out += ';';
      out += std::to_string(caps.mb_domains[i]);
      out += '=';
      out += std::to_string(pct);
    }
    out += '\n';
  }
  return out;
}

controller::controller(fs::path root) : root_(std::move(root)) {
  struct stat st {};
  if (::stat(root_.c_str(), &st) != 0)
    throw std::runtime_error("promptly resctrl: " + root_.string() + ": " + errno_text(errno) +
                             " (resctrl is not mounted there; it needs a CPU with Intel RDT or AMD PQoS and "
                             "'mount -t resctrl resctrl " + root_.string() + "')");
  if (!available(root_))
    throw std::runtime_error("promptly resctrl: " + root_.string() +
                             " is not a resctrl file system (expected schemata, cpus_list and info/L3 or info/MB)");
  const std::string schemata = read_if_exists(root_ / "schemata").value_or("");
  const fs::path l3 = root_ / "info" / "L3";
  unsigned closids = 0;
  if (is_dir(l3)) {
    caps_.l3 = true;
    const auto mask = read_if_exists(l3 / "cbm_mask");
    if (!mask) fail(l3 / "cbm_mask", "cannot open", ENOENT);
    try {
      caps_.l3_full_mask = std::stoull(trim(*mask), nullptr, 16);
    } catch (const std::exception&) {
      throw std::runtime_error("promptly resctrl: " + (l3 / "cbm_mask").string() + " holds '" + trim(*mask) +
                               "', not a hexadecimal mask");
    }
    caps_.l3_ways = static_cast<unsigned>(std::popcount(caps_.l3_full_mask));
    caps_.l3_min_ways = read_unsigned(l3 / "min_cbm_bits", 1);
    closids = read_unsigned(l3 / "num_closids", 0);
    caps_.l3_domains = domains_of(schemata, "L3");
  }
  const fs::path mb = root_ / "info" / "MB";
  if (is_dir(mb)) {
    caps_.mb = true;
    caps_.mb_min_percent = read_unsigned(mb / "min_bandwidth", 10);
    caps_.mb_granularity = read_unsigned(mb / "bandwidth_gran", 10);
    const unsigned mb_closids = read_unsigned(mb / "num_closids", 0);
    closids = closids == 0 ? mb_closids : std::min(closids, mb_closids == 0 ? closids : mb_closids);
    caps_.mb_domains = domains_of(schemata, "MB");
  }
  caps_.closids = closids;
}

fs::path controller::group_path(const std::string& group) const {
  if (group.empty() || group == "." || group == ".." || group.find('/') != std::string::npos ||
      group.find('\0') != std::string::npos || kernel_entry(group))
    throw std::invalid_argument("promptly resctrl: '" + group +
                                "' cannot name a class of service (a single path component other than info, "
                                "mon_groups, mon_data)");
  return root_ / group;
}

std::vector<std::string> controller::groups() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && !kernel_entry(name)) out.push_back(name);
  }
  if (ec) fail(root_, "cannot list", ec.value());
  std::sort(out.begin(), out.end());
  return out;
}

void controller::create_group(const std::string& group) {
  const fs::path path = group_path(group);
  // The default group holds one class of service; the kernel refuses the
  // rest with ENOSPC, which says less than this.
  if (caps_.closids > 0 && groups().size() + 1 >= caps_.closids)
    throw std::runtime_error("promptly resctrl: cannot create " + path.string() + ": all " +
                             std::to_string(caps_.closids) + " classes of service are in use (the default group included)");
  if (::mkdir(path.c_str(), 0755) != 0) fail(path, "cannot create class of service", errno);
}

void controller::remove_group(const std::string& group) {
  const fs::path path = group_path(group);
  if (::rmdir(path.c_str()) != 0) fail(path, "cannot remove class of service", errno);
}

void controller::write_file(const fs::path& file, const std::string& text) const {
  // No O_CREAT: the kernel makes a group's files; a missing one means the
  // group does not exist (or this is not resctrl).
  const int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) fail(file, "cannot open", errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      // The kernel explains a refused schemata or cpus_list here.
      std::string why;
      try {
        why = trim(read_if_exists(root_ / "info" / "last_cmd_status").value_or(""));
      } catch (const std::exception&) {
      }
      throw std::runtime_error("promptly resctrl: cannot write " + file.string() + ": " + errno_text(err) +
                               (why.empty() ? "" : " (kernel: " + why + ")"));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) fail(file, "cannot close", errno);
}

void controller::set_allocation(const std::string& group, const allocation& a) {
  const std::string text = schemata_text(caps_, a);
  if (text.empty()) return;
  write_file(group_path(group) / "schemata", text);
}

void controller::assign_cpus(const std::string& group, std::span<const unsigned> cpus) {
  write_file(group_path(group) / "cpus_list", cpu_list(cpus) + "\n");
}

std::vector<unsigned> controller::read_cpus(const fs::path& file) const {
  const auto text = read_if_exists(file);
  if (!text) fail(file, "cannot open", ENOENT);
  try {
    return parse_cpu_list(*text);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string(e.what()) + " read from " + file.string());
  }
}

std::vector<unsigned> controller::cpus(const std::string& group) const {
  return read_cpus(group_path(group) / "cpus_list");
}

std::vector<unsigned> controller::default_cpus() const { return read_cpus(root_ / "cpus_list"); }

void controller::release_cpus(std::span<const unsigned> cpus) {
  if (cpus.empty()) return;
  std::vector<unsigned> all = default_cpus();
  all.insert(all.end(), cpus.begin(), cpus.end());
  write_file(root_ / "cpus_list", cpu_list(all) + "\n");
}

}  // namespace promptly::resctrl
