#include "server/daemon/agent.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>

namespace promptly::server::daemon {

std::string agent_answer(bool accepting, bool ready, const server_stats& s, const agent_limits& l) {
  if (!accepting) return "drain\n";
  if (!ready) return "down\n";
  const double workers = std::max(1u, l.workers);
  const double busy = std::min<double>(s.cores_in_use, workers);
  const double core_room = (workers - busy + 1) / (workers + 1);
  const std::size_t slots = std::max<std::size_t>(1, l.max_running + l.max_queued);
  const std::size_t used = std::min(slots, s.running + s.queued);
  const double slot_room = double(slots - used) / double(slots);
  const long weight = std::clamp(std::lround(100 * core_room * slot_room), 1L, 100L);
  return "up " + std::to_string(weight) + "% maxconn:" + std::to_string(slots) + "\n";
}

agent_listener::agent_listener(job_server& srv, agent_limits limits, int listen_fd)
    : srv_(srv), limits_(limits), listen_fd_(listen_fd), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    throw std::runtime_error("agent: eventfd failed");
  }
  thread_ = std::thread([this] { run(); });
}

agent_listener::~agent_listener() {
  stop();
  ::close(wake_fd_);
  ::close(listen_fd_);
}

void agent_listener::stop() {
  if (!thread_.joinable()) return;
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void agent_listener::run() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    for (;;) {
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c < 0) break;  // EAGAIN: backlog empty (or a transient error: poll again)
      const std::string line = agent_answer(srv_.accepting(), srv_.ready(), srv_.stats(), limits_);
      // A fresh socket's send buffer takes the short line at once; a peer
      // that is gone costs nothing more.
      (void)!::send(c, line.data(), line.size(), MSG_NOSIGNAL);
      ::shutdown(c, SHUT_WR);
      ::close(c);
    }
  }
}

}  // namespace promptly::server::daemon
