// promptlyd's sockets and their security defaults (docs/server.md,
// "Security"): a Unix socket by default, mode 0600, in a directory the user
// owns; TCP only on a loopback address. Shared by the daemon (listen) and
// its clients (connect), so both agree on the default path.
//
// Every function throws std::runtime_error naming the path or address and
// the system error; no function leaves a descriptor open on failure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace promptly::server::daemon {

// $XDG_RUNTIME_DIR/promptly/promptlyd.sock, or /tmp/promptly-<uid>/promptlyd.sock.
[[nodiscard]] std::string default_socket_path();

// Which file a socket path named when it was bound (lstat's st_dev, st_ino).
struct socket_file_id {
  dev_t dev = 0;
  ino_t ino = 0;
};

// Creates the socket's directory if missing (mode 0700), refuses a
// directory owned by another user or writable by group or others, removes a
// stale socket file (one nobody listens on; a live one is an error: another
// daemon serves it), binds with mode 0600 and listens. Non-blocking. If
// created is given, it receives the identity of the socket file bound.
[[nodiscard]] int listen_unix(const std::string& path, socket_file_id* created = nullptr);

// Removes the socket file at path only if it is still the one bound
// (created by listen_unix): a successor daemon may have replaced it since
// this one closed its listener, and its socket must stay. Returns whether it
// removed the file. (Between the check and the unlink a replacement can
// still slip in; the window is two system calls instead of a whole drain.)
bool remove_socket_file(const std::string& path, socket_file_id created);

// host must be a loopback address (127.0.0.0/8, ::1 or "localhost");
// port 0 picks a free port (see bound_port). Non-blocking.
[[nodiscard]] int listen_tcp(const std::string& host, std::uint16_t port);
[[nodiscard]] std::uint16_t bound_port(int fd);
[[nodiscard]] bool is_loopback(const std::string& host);

// "host:port" -> parts; throws std::invalid_argument naming the problem.
struct host_port {
  std::string host;
  std::uint16_t port = 0;
};
[[nodiscard]] host_port parse_host_port(const std::string& s);

// Blocking client connections (the CLI, the tests, the benchmark).
[[nodiscard]] int connect_unix(const std::string& path);
[[nodiscard]] int connect_tcp(const std::string& host, std::uint16_t port);

// The first line of a token file, without surrounding whitespace. Refuses a
// file readable by group or others and an empty or short (< 16 bytes) token.
[[nodiscard]] std::string read_token_file(const std::string& path);

}  // namespace promptly::server::daemon
