// Internal entry points of fd_operations.cpp that other io files use.
#pragma once

#include <stop_token>

#include "promptly/future.hpp"
#include "promptly/io/deadline.hpp"
#include "promptly/io/descriptor.hpp"

namespace promptly::io::detail {

// io::accept, optionally setting TCP_NODELAY on the accepted socket in the
// same attempt (the listener does, for TCP).
future<descriptor> accept_connection(descriptor& listening, deadline until, std::stop_token stop, bool nodelay);

}  // namespace promptly::io::detail
