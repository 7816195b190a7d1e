// promptly::io::descriptor: an owned, non-blocking file descriptor (a pipe
// end, a TCP or Unix socket, a listening socket) that I/O operations run on.
//
//   auto [r, w] = io::make_pipe();
//   io::write(w, "hello\n").get();            // parks the task, never the worker
//   char buf[64];
//   std::size_t n = io::read(r, std::span(buf)).get();
//
// Ownership: the descriptor closes its fd when destroyed or close()d.
// Closing completes every pending operation on it with io::closed, and any
// operation started afterwards fails with io::closed too (nothing waits on a
// closed descriptor). Adopting an fd switches it to O_NONBLOCK; note that
// this flag belongs to the open file description, which a dup()ed or
// inherited fd (stdin of a terminal) shares with other holders.
//
// Thread safety: operations may be started on one descriptor from several
// tasks and threads at once, and close() may race with them. Operations of
// one direction (reads, or writes) complete in the order they were queued.
// Moving or destroying a descriptor while another thread uses the same
// object is a data race, as for any object.
#pragma once

#include <utility>

namespace promptly::io {

namespace detail {
struct fd_state;
struct descriptor_access;
}

class descriptor {
 public:
  descriptor() noexcept = default;
  // Adopts `fd` (which must be open) and makes it non-blocking. Throws
  // io::error("adopt") if it is not open or fcntl fails.
  explicit descriptor(int fd);
  descriptor(descriptor&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  descriptor& operator=(descriptor&& o) noexcept;
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;
  ~descriptor();

  // The fd number, or -1 when empty or closed.
  [[nodiscard]] int native_handle() const noexcept;
  [[nodiscard]] bool is_open() const noexcept { return native_handle() >= 0; }
  explicit operator bool() const noexcept { return is_open(); }

  // Completes pending operations with io::closed, then closes the fd.
  // Idempotent; safe while other threads run operations on it.
  void close() noexcept;

  // Sockets: shutdown(SHUT_WR), the peer's reads then see end of file.
  // Throws io::error("shutdown").
  void shutdown_write();

  // Internal: the shared per-descriptor state the reactor works with.
  detail::fd_state* state() const noexcept { return state_; }

 private:
  friend struct detail::descriptor_access;
  explicit descriptor(detail::fd_state* s) noexcept : state_(s) {}
  detail::fd_state* state_ = nullptr;
};

// A pipe: {read end, write end}, both non-blocking. Throws io::error("pipe").
[[nodiscard]] std::pair<descriptor, descriptor> make_pipe();

// A connected pair of Unix stream sockets. Throws io::error("socketpair").
[[nodiscard]] std::pair<descriptor, descriptor> make_socket_pair();

}  // namespace promptly::io
