// The email server's load driver: one client per user. Closed loop by default (the papers'
// driver): each client sends a request, waits for its ACK and DONE, checks the answer, and
// sends the next one at once. Open loop with `rate_per_s`: requests arrive as a Poisson process
// whatever the answers, and a client pipelines a request that arrives while its earlier ones
// are unanswered. Latencies then count from the arrival, not from the write, so a server (or a
// driver) that falls behind is charged for the wait (no coordinated omission); and every
// server is offered the same load, where a closed loop offers less to a server that answers
// some requests late. The operation mix is 40% SEND (8 KB messages to a random user), 25% SORT,
// 35% PRINT (a random message of the client's own mailbox).
//
// Single-threaded (epoll over non-blocking sockets), so the driver costs little CPU and the
// same driver measures every server (Promptly under each policy, and the Go peer).
//
// Measured per request, at the client: resp = request sent (open loop: due) -> ACK received
// (the papers' "request to first reaction"); send / sort / print = request sent (due) -> DONE
// received. Checks: every request gets exactly one ACK then one DONE with the expected sequence
// number (ACKs come in request order, DONEs in any); a SORT answer lists the mailbox in key
// order; a PRINT answer carries an intact message (the checksum of message_text.hpp survives
// Huffman coding); no ERR, except that in open loop a request the server refuses as busy (its
// in-flight limits) is counted as refused, not failed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace email {

struct driver_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::size_t clients = 6;
  // > 0: every client sends exactly this many requests, all measured (tests). 0: time-based:
  // warm up, RESET the server's counters, measure for `measure`, then let outstanding requests
  // finish.
  std::size_t requests_per_client = 0;
  std::chrono::milliseconds warmup{500};
  std::chrono::milliseconds measure{4000};
  std::size_t message_bytes = 8192;
  unsigned send_percent = 40, sort_percent = 25;  // print: the rest
  std::uint64_t seed = 1;
  // > 0: open loop at this many requests per second over all clients (each client rate/clients,
  // exponential gaps from its own seeded stream, so the operation mix is the closed loop's).
  // 0: closed loop. Negative or not finite: run_driver throws std::invalid_argument.
  double rate_per_s = 0;
  std::chrono::milliseconds drain_timeout{10000};  // outstanding requests at the end
};

struct driver_report {
  // Latencies (us) of the measured requests; resp has one entry per request.
  std::vector<double> resp_us, send_us, sort_us, print_us;
  std::uint64_t completed = 0;   // measured requests answered
  std::uint64_t issued = 0;      // every request sent (warm-up included)
  std::uint64_t answered = 0;    // every request answered (warm-up included), refusals too
  std::uint64_t refused = 0;     // open loop: measured requests the server refused as busy
  // Open loop: how late the driver wrote each measured request after it was due (us); a large
  // value means the driver, not only the server, fell behind.
  std::vector<double> issue_lag_us;
  // Open loop: resp and send measured from the write instead of the arrival (closed loop: the
  // same as resp_us and send_us). Without the driver's own lateness in writing, which a server
  // that keeps every core busy makes longer; the lateness in reading the answer stays in.
  std::vector<double> resp_from_write_us, send_from_write_us;
  double measured_s = 0;
  std::string server_stats;      // the server's STATS line after the run
  std::vector<std::string> failures;  // failed checks (empty: all passed); at most 20 kept
  std::uint64_t failure_count = 0;
};

// Connects, logs every client in (users u0 .. u<clients-1>), runs, and returns. Throws
// std::runtime_error if the server cannot be reached or a login fails.
driver_report run_driver(const driver_options& options);

}  // namespace email
