// Thread-per-connection echo with blocking sockets, shared by the peers that
// handle interaction on dedicated OS threads (runtimes `tbb` and `os-nice`):
// an accept thread, and one thread per connection that reads a line and
// writes it back. `handle(line)` runs each line through the peer's own
// mechanism (a oneTBB arena, or nothing) before it is echoed.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "echo_server.hpp"

namespace echo {

// Reads lines from `in` (blocking) and writes each back to `out`.
inline void echo_blocking(int in, int out, const std::function<void(std::string&)>& handle) {
    std::string buf;
    char chunk[4096];
    for (;;) {
        ssize_t n = ::read(in, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        buf.append(chunk, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
            std::string line = buf.substr(0, nl + 1);
            buf.erase(0, nl + 1);
            handle(line);
            for (std::size_t done = 0; done < line.size();) {
                ssize_t w = ::write(out, line.data() + done, line.size() - done);
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) return;
                done += static_cast<std::size_t>(w);
            }
        }
    }
}

// Listens on 127.0.0.1:0; returns the socket and stores the port.
inline int listen_loopback(int& port) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 4096) != 0 ||
        ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        std::perror("echo server: listen");
        std::exit(3);
    }
    port = ntohs(a.sin_port);
    return s;
}

// The accept loop: one detached thread per connection, made by `spawn`.
inline void accept_forever(int listening, const std::function<void(int)>& serve_connection) {
    for (;;) {
        int c = ::accept4(listening, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;
        }
        int one = 1;
        ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::thread([c, serve_connection] {
            serve_connection(c);
            ::close(c);
        }).detach();
    }
}

// The interactive kernel on dedicated OS threads (net: a detached accept thread, a thread per
// connection; term: one thread over stdin/stdout); announces "ready [port=P]" on the control
// channel. finish() returns when the driver ends the run (net: it closes our stdin; term: the
// echo thread sees EOF). Connection threads may still block in read() then: the servers end
// with std::_Exit.
class blocking_interactive {
public:
    blocking_interactive(const std::string& mode, std::function<void(std::string&)> handle)
        : net_(mode == "net") {
        if (net_) {
            int port = 0;
            int listening = listen_loopback(port);
            std::thread([listening, handle] {
                accept_forever(listening, [handle](int c) { echo_blocking(c, c, handle); });
            }).detach();
            say("ready port=" + std::to_string(port));
        } else {
            term_ = std::thread([handle] { echo_blocking(0, 1, handle); });
            say("ready");
        }
    }

    void finish() {
        if (net_)
            wait_for_stdin_eof();
        else
            term_.join();
    }

private:
    bool net_;
    std::thread term_;
};

}  // namespace echo
