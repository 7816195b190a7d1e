// Promptly I/O: futures for reads, writes, accepts and connects on
// non-blocking descriptors, timers, and the helpers network programs need.
// One reactor thread per process (epoll) owns readiness and timers; a task
// that waits on an I/O future parks its fiber and never blocks its worker.
// User guide: docs/io.md. Design and protocols: src/io/README.md.
#pragma once

#include "promptly/io/connection_limit.hpp"
#include "promptly/io/deadline.hpp"
#include "promptly/io/descriptor.hpp"
#include "promptly/io/error.hpp"
#include "promptly/io/line_reader.hpp"
#include "promptly/io/listener.hpp"
#include "promptly/io/operations.hpp"
#include "promptly/io/stats.hpp"
#include "promptly/io/timers.hpp"
