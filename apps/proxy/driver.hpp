// The proxy's load driver: N closed-loop clients (one thread and one keep-alive connection
// each), each sending `requests` GETs through the proxy for sites chosen uniformly at random
// from the origin's 4096. Measured per request: resp (request sent -> the proxy's reaction, the
// X-Reacted-At-Ns reading of its client loop: the papers' "resp", I-Cilk Sec. 5.2, Fig. 7),
// first_byte (request sent -> first byte of the response) and the whole response time, split
// into hit and miss by the proxy's X-Cache header. Checks: status 200, the exact page body, and
// a reaction stamp between the send and the first byte (the proxy must run on this machine:
// the stamp is its monotonic clock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace proxy {

struct driver_options {
  std::uint16_t proxy_port = 0, origin_port = 0;
  std::size_t clients = 8;
  std::size_t requests = 200;  // per client
  std::uint64_t seed = 1;
};

struct driver_report {
  std::vector<double> resp_us, first_byte_us, hit_us, miss_us;   // latencies (us)
  std::vector<double> hit_ns_per_byte, miss_ns_per_byte;
  std::uint64_t answered = 0, issued = 0;
  double elapsed_s = 0;
  std::string proxy_stats;  // GET /proxy-stats at the end
  std::vector<std::string> failures;  // at most 20
  std::uint64_t failure_count = 0;
};

driver_report run_driver(const driver_options& options);

}  // namespace proxy
