// Socket helpers shared by the apps' tests (kept out of test_support.hpp: <sys/socket.h>
// declares ::send and ::shutdown, names other tests give their priority tags).
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string_view>

// A slow client's attack: sends `bytes` over socket `fd` one at a time, `pace` apart, until the
// peer has something to say (a reply, or the end of the connection) or the bytes run out;
// returns how many it sent. The pace is the attack, not a synchronisation: the peer's answer is
// the event the caller waits for.
inline std::size_t trickle_until_answered(int fd, std::string_view bytes, std::chrono::milliseconds pace) {
  for (std::size_t sent = 0; sent < bytes.size(); ++sent) {
    if (::send(fd, bytes.data() + sent, 1, MSG_NOSIGNAL) != 1) return sent;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(pace.count())) > 0) return sent + 1;
  }
  return bytes.size();
}
