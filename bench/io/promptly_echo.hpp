// the fairly prompt paper Sec. 6.2.1's interactive kernels on Promptly, shared by the echo servers of suites
// `io` (echo_promptly.cpp) and `fair` (../fair/fair_echo.cpp):
//   net:  io::listener::serve spawns a task per connection at `level`; each reads lines with
//         io::line_reader and writes them back (parking, never blocking a worker). With
//         handler "coroutine" each connection is a co::task instead (docs/coroutines.md):
//         it waits holding its frame only, no fiber stack.
//   term: one task at `level` echoes stdin lines to stdout through io:: descriptors.
// Announces "ready [port=P]" on the control channel (echo_server.hpp) once listening.
#pragma once

#include <promptly/co/task.hpp>
#include <promptly/io.hpp>
#include <promptly/promptly.hpp>

#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>

#include "echo_server.hpp"

namespace echo {

// Accepts a line of text and echoes it back, until the client leaves or `st` stops.
inline void echo_lines(promptly::io::descriptor& in, promptly::io::descriptor& out, std::stop_token st) {
    promptly::io::line_reader lines(in);
    try {
        for (;;) promptly::io::write(out, lines.read_line({}, st).get() + "\n", {}, st).get();
    } catch (const promptly::io::end_of_file&) {
    } catch (const promptly::io::cancelled&) {
    }
}

// The same as a coroutine: a waiting connection holds no fiber.
inline promptly::co::task<void> echo_lines_co(promptly::io::descriptor c, std::stop_token st) {
    promptly::io::line_reader lines(c);
    try {
        for (;;) co_await promptly::io::write(c, co_await lines.co_read_line({}, st) + "\n", {}, st);
    } catch (const promptly::io::end_of_file&) {
    } catch (const promptly::io::cancelled&) {
    }
}

class promptly_interactive {
public:
    // handler: "fiber" (a task per connection) or "coroutine" (a co::task per connection).
    promptly_interactive(promptly::runtime& rt, const std::string& mode, unsigned level,
                         const std::string& handler = "fiber")
        : net_(mode == "net") {
        namespace io = promptly::io;
        if (handler != "fiber" && handler != "coroutine")
            throw std::invalid_argument("--handler must be fiber or coroutine, not '" + handler + "'");
        if (net_) {
            listener_.emplace(io::listener::tcp("127.0.0.1", 0, 4096));
            if (handler == "coroutine")
                done_ = listener_->serve(rt, echo_lines_co, {.level = level, .stop = stop_.get_token()});
            else
                done_ = listener_->serve(
                    rt, [](io::descriptor c, std::stop_token st) { echo_lines(c, c, st); },
                    {.level = level, .stop = stop_.get_token()});
            say("ready port=" + std::to_string(listener_->port()));
        } else {
            done_ = rt.submit(promptly::level{level}, [st = stop_.get_token()] {
                io::descriptor in(0), out(1);
                echo_lines(in, out, st);
            });
            say("ready");
        }
    }

    // After the phases: net waits for the driver to close our stdin and stops the listener;
    // term ends when the driver closes our stdin.
    void finish() {
        if (net_) {
            wait_for_stdin_eof();
            stop_.request_stop();  // ends the accept loop and every connection's wait
        }
        done_.get();
    }

private:
    bool net_;
    std::stop_source stop_;
    std::optional<promptly::io::listener> listener_;
    promptly::future<void> done_;
};

}  // namespace echo
