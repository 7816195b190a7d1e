// Latency-hiding I/O operations: an I/O call returns a future and does not
// occupy the processor; touching the future waits for it (docs/io.md).
//
// Each call first tries the system call on the non-blocking descriptor; if
// the kernel would block (EAGAIN), the operation is handed to the reactor
// thread, which completes it when the descriptor is ready. The returned
// future is ready at once when the call could complete immediately. Its
// get() parks the calling task's fiber (its worker runs other tasks) or, on
// a thread that is no worker, blocks that thread.
//
// Every operation takes an optional deadline (io::timed_out) and an optional
// std::stop_token: requesting a stop completes the pending operation with
// io::cancelled (the owner of a connection cancels everything it waits for
// with one std::stop_source). Failures surface at get() as io::error
// subclasses (io/error.hpp). Nothing hangs silently: a pending operation
// ends when it completes, its deadline passes, its token is stopped or its
// descriptor is closed.
//
// Buffers: the bytes `buf` points to must stay valid until the future is
// ready. (Waiting on the future, as tasks normally do, guarantees it.)
// Dropping every handle of the future does not cancel the operation: stop
// its token or close the descriptor for that.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>

#include "promptly/future.hpp"
#include "promptly/io/deadline.hpp"
#include "promptly/io/descriptor.hpp"

namespace promptly::io {

// read(2): completes with the number of bytes read, at least 1 (0 only
// for an empty buffer); throws io::end_of_file at the end of the stream.
[[nodiscard]] future<std::size_t> read(descriptor& d, std::span<char> buf, deadline until = {}, std::stop_token stop = {});
[[nodiscard]] future<std::size_t> read(descriptor& d, std::span<std::byte> buf, deadline until = {}, std::stop_token stop = {});

// write(2) of the whole buffer: completes when every byte is written (the
// reactor continues after partial writes) with the number of bytes, or
// fails (io::connection_reset when the reader is gone). Never raises
// SIGPIPE. A write that fails after writing part of the buffer (deadline,
// cancellation, close, error) leaves that part written: the stream's
// framing is then unknown and the connection is best closed.
[[nodiscard]] future<std::size_t> write(descriptor& d, std::string_view data, deadline until = {}, std::stop_token stop = {});
[[nodiscard]] future<std::size_t> write(descriptor& d, std::span<const std::byte> data, deadline until = {},
                          std::stop_token stop = {});

// recv(2) / send(2) on sockets, with flags (MSG_PEEK, MSG_OOB, ...); the
// same completion rules as read / write. send adds MSG_NOSIGNAL.
[[nodiscard]] future<std::size_t> recv(descriptor& d, std::span<char> buf, int flags = 0, deadline until = {},
                         std::stop_token stop = {});
[[nodiscard]] future<std::size_t> send(descriptor& d, std::string_view data, int flags = 0, deadline until = {},
                         std::stop_token stop = {});

// accept4(2) on a listening socket: the connection, non-blocking.
[[nodiscard]] future<descriptor> accept(descriptor& listening, deadline until = {}, std::stop_token stop = {});

// connect(2) of a socket to an address: completes when connected.
[[nodiscard]] future<void> connect(descriptor& socket, const sockaddr* address, socklen_t length, deadline until = {},
                     std::stop_token stop = {});

// A new TCP connection to a numeric IPv4 or IPv6 address ("127.0.0.1",
// "::1"; "localhost" means 127.0.0.1), with TCP_NODELAY set. Name resolution
// blocks, so it is left to the caller. Throws io::error("socket") at once
// for a malformed address; connection failures surface at get().
[[nodiscard]] future<descriptor> connect_tcp(std::string_view host, std::uint16_t port, deadline until = {},
                               std::stop_token stop = {});

// A new connection to a Unix stream socket at `path`.
[[nodiscard]] future<descriptor> connect_unix(std::string_view path, deadline until = {}, std::stop_token stop = {});

}  // namespace promptly::io
