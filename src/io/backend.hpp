// Which readiness backend the process's reactor uses (reactor.hpp): epoll,
// or io_uring's multishot polls when the library was built with liburing
// and the kernel lets the process create a ring.
//
// Chosen once, when the reactor starts (the first operation that has to
// wait, or the first timer): runtime_config::io_backend of the runtimes
// constructed before then ("auto", "epoll" or "io_uring"; the last one
// that is not "auto" wins), else the environment variable
// PROMPTLY_IO_BACKEND, else auto. auto is epoll, the backend every process
// can fall back to (docs/io.md, "Backends"). io_uring uses
// io_uring when a ring can be made and falls back to epoll otherwise
// (io_uring_queue_init fails with ENOSYS on old kernels and EPERM under
// seccomp profiles that forbid it), saying so once on stderr. A request
// after the reactor started changes nothing (io::stats().backend tells what
// runs).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace promptly::io::detail {

enum class backend_choice : int { automatic, epoll, io_uring };

// The backend a name (runtime_config::io_backend, PROMPTLY_IO_BACKEND) asks for. Throws
// std::invalid_argument for a name other than auto, epoll, io_uring.
inline backend_choice parse_backend(std::string_view name) {
  if (name == "auto") return backend_choice::automatic;
  if (name == "epoll") return backend_choice::epoll;
  if (name == "io_uring") return backend_choice::io_uring;
  throw std::invalid_argument("unknown I/O backend '" + std::string(name) + "' (expected auto, epoll or io_uring)");
}

// Throws what parse_backend throws.
void request_backend(std::string_view name);

// The largest worker-poll window, in microseconds, that runtime_config and
// PROMPTLY_IO_WORKER_POLL_US accept.
inline constexpr int max_worker_poll_us = 100'000;

// runtime_config::io_worker_poll_us (validated by the caller): -1 changes
// nothing; another value decides the reactor's worker-poll window if the
// reactor has not started yet (the environment variable comes second).
void request_worker_poll_us(int us) noexcept;

}  // namespace promptly::io::detail
