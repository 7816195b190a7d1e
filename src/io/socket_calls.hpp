// recv(2) and send(2) on io::'s sockets, without glibc's cancellation-point
// wrappers.
//
// Why: glibc's recv and send are POSIX cancellation points, so each call
// switches the thread to asynchronous cancellation and back: two atomic
// compare-exchanges on the thread descriptor around every system call. io::
// descriptors are non-blocking, so these calls never block and a
// cancellation point in them could never be where a thread waits; Promptly
// does not pthread_cancel its threads either. In a saturated echo server the
// switch was 4% of the server's samples (bench/results/io/fast-path-2026-11-29/).
#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

namespace promptly::io::detail {

// As ::recv: bytes received, or -1 with errno set.
inline ssize_t recv_socket(int fd, void* buf, std::size_t len, int flags) noexcept {
  return ::syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
}

// As ::send: bytes sent, or -1 with errno set.
inline ssize_t send_socket(int fd, const void* buf, std::size_t len, int flags) noexcept {
  return ::syscall(SYS_sendto, fd, buf, len, flags, nullptr, 0);
}

}  // namespace promptly::io::detail
