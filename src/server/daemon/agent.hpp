// promptlyd's load report for HAProxy's agent check (docs/cluster.md,
// "Agent"): on each connection to --agent-port the daemon writes one line,
// HAProxy's agent-check protocol, and closes.
//
//   drain                  the daemon is draining (SIGTERM): no new requests,
//                          the ones in flight finish
//   down                   admission would reject a submit now
//   up W% maxconn:M        otherwise, with
//     W = clamp(round(100 * core_room * slot_room), 1, 100)
//     core_room = (workers - cores_in_use + 1) / (workers + 1)
//     slot_room = (M - running - queued) / M,  M = max_running + max_queued
//
// Why: core_room is the job policy's own view of idle cores (AMCilk Sec. 4:
// the cores the allocator has not given to any job), so a node whose cores
// are all busy gets fewer new jobs before its queue grows; slot_room falls
// as the request buffer fills, so weight reaches its floor before the node
// rejects. The +1 keeps a busy node with queue room selectable. maxconn is
// the admission bound: HAProxy queues requests beyond it in its own queue
// instead of sending them to be refused. Recent flow time is not a term:
// HAProxy's leastconn already sees it, since a node whose jobs take longer
// holds its connections longer.
//
// Invariant: the listener thread only reads the job server's state
// (accepting, ready, stats) and never blocks on a client for longer than
// one send to a fresh socket; stop() ends it within one wake-up.
#pragma once

#include <cstddef>
#include <string>
#include <thread>

#include <promptly/server/job_server.hpp>

namespace promptly::server::daemon {

struct agent_limits {
  unsigned workers = 1;
  std::size_t max_running = 1;
  std::size_t max_queued = 0;
};

// The agent's answer line (with its newline) for a node in this state.
[[nodiscard]] std::string agent_answer(bool accepting, bool ready, const server_stats& s, const agent_limits& l);

class agent_listener {
 public:
  // Takes ownership of a listening socket and answers on it from a thread of its own.
  agent_listener(job_server& srv, agent_limits limits, int listen_fd);
  ~agent_listener();
  agent_listener(const agent_listener&) = delete;
  agent_listener& operator=(const agent_listener&) = delete;
  void stop();

 private:
  void run();
  job_server& srv_;
  const agent_limits limits_;
  int listen_fd_;
  int wake_fd_;
  std::thread thread_;
};

}  // namespace promptly::server::daemon
