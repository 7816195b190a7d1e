// Server side of suite `io` (bench/io/README.md), shared by the C++ echo
// servers (Promptly, oneTBB, os-nice): options, the control channel to the
// driver and the compute kernel's phases.
//
// The driver (driver.cpp) starts a server as its child with
//   fd 0/1   term mode: the echo channel (driver -> server lines, echoed back)
//            net mode: stdin is a pipe the driver closes to stop the server
//   fd 3     control channel, server -> driver, one line per event
// and these options: --mode net|term --workers W --n N --cutoff C --warmup W --reps R
// --min-loaded-ms M, and for Promptly --policy oblivious|prompt|aps|fair (and with fair
// --criterion H-L, echo_promptly.cpp).
//
// Control lines (server -> driver):
//   ready [port=P]                  endpoints are up (net: listening on 127.0.0.1:P)
//   phase alone|loaded I            compute repetition I starts (I < warmup: warm-up)
//   time alone|loaded I SECONDS V   it took SECONDS and computed V
//   done                            no more phases; the server exits at stdin EOF
// The driver sends interactions only between "phase loaded I" and the next "time".
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"

namespace echo {

struct options {
    std::string mode;    // "net" or "term"
    std::string policy;  // Promptly only: the runtime's level policy ("" = not given)
    long workers, n, cutoff, warmup, reps;
    // Measured repetitions continue past `reps` until the loaded ones add up to this much:
    // a fast runtime gets as many interactions as a slow one.
    long min_loaded_ms;
};

// `extra(a)` reads a server's own options before the unknown ones are rejected.
template <class Extra>
inline options parse(int argc, char** argv, Extra&& extra) {
    bench::args a(argc, argv);
    extra(a);
    options o;
    o.mode = a.get_string("mode", "net");
    o.policy = a.get_string("policy", "");
    o.workers = a.get_long("workers", 2);
    o.n = a.get_long("n", 36);
    o.cutoff = std::max(2L, a.get_long("cutoff", 12));
    o.warmup = a.get_long("warmup", 1);
    o.reps = a.get_long("reps", 3);
    o.min_loaded_ms = a.get_long("min-loaded-ms", 0);
    a.finish();
    if (o.mode != "net" && o.mode != "term") bench::args::fail("--mode must be net or term");
    if (o.workers < 1 || o.reps < 0 || o.warmup < 0) bench::args::fail("bad --workers/--reps/--warmup");
    return o;
}

inline options parse(int argc, char** argv) {
    return parse(argc, argv, [](bench::args&) {});
}

// A fairness criterion "50-25-25": one integer weight per level, most urgent first (the
// fairly prompt paper's H-M-L notation). Exits 2 naming `option` on anything else.
inline std::vector<long long> parse_weights(const std::string& text, const char* option) {
    std::vector<long long> w;
    std::size_t begin = 0;
    for (;;) {
        const std::size_t end = std::min(text.find('-', begin), text.size());
        const std::string part = text.substr(begin, end - begin);
        char* stop = nullptr;
        const long long v = std::strtoll(part.c_str(), &stop, 10);
        if (part.empty() || *stop != '\0')
            bench::args::fail(std::string("--") + option + " must look like 50-25-25, not '" +
                              text + "'");
        w.push_back(v);
        if (end == text.size()) break;
        begin = end + 1;
    }
    if (w.size() < 2) bench::args::fail(std::string("--") + option + " needs at least two levels: '" + text + "'");
    return w;
}

// One line to the driver on fd 3 (a single write: lines never interleave).
inline void say(const std::string& line) {
    std::string l = line + "\n";
    const char* p = l.data();
    std::size_t left = l.size();
    while (left > 0) {
        ssize_t n = ::write(3, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::perror("echo server: control channel");
            std::exit(3);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

// Runs the compute kernel alone and under load, alternating (alone I, loaded I,
// alone I+1, ...) so that both see the same drift of this shared machine:
// warmup + reps times, and more while the measured loaded runs add up to less
// than min_loaded_ms. `compute()` (or `compute(phase)`, phase "alone" or "loaded", for a
// server that changes its set-up between the two) returns the kernel's answer.
template <class F>
void run_phases(const options& o, F&& compute) {
    using clock = std::chrono::steady_clock;
    constexpr long max_repetitions = 100000;
    double loaded_s = 0;
    for (long i = 0; i < max_repetitions; ++i) {
        const bool measured = i >= o.warmup;
        if (measured && i >= o.warmup + o.reps && loaded_s * 1000 >= double(o.min_loaded_ms)) break;
        for (const char* phase : {"alone", "loaded"}) {
            say(std::string("phase ") + phase + " " + std::to_string(i));
            auto t0 = clock::now();
            long v;
            if constexpr (std::is_invocable_v<F&, const char*>)
                v = compute(phase);
            else
                v = compute();
            double s = std::chrono::duration<double>(clock::now() - t0).count();
            if (measured && phase[0] == 'l') loaded_s += s;
            char buf[128];
            std::snprintf(buf, sizeof buf, "time %s %ld %.9f %ld", phase, i, s, v);
            say(buf);
        }
    }
    say("done");
}

// Net mode: blocks until the driver closes our stdin.
inline void wait_for_stdin_eof() {
    char buf[256];
    for (;;) {
        ssize_t n = ::read(0, buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;
        if (n < 0 && errno == EAGAIN) ::usleep(10000);
    }
}

}  // namespace echo
