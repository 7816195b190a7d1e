"""Suite `io`: interactive echo kernels next to a saturating compute kernel.

The fairly prompt paper's (Sec. 6.2.1) terminal echo and network echo, at 50 interactions per second, while
fib(n) (above the cutoff: one spawn per call, as in suite `core`) runs on every worker: the
fairly prompt paper's Table 5 comparison (Sec. 6.2.5) on this machine. Every pair runs the same driver
(`bench_io_driver`, a separate process that starts the runtime's echo server, timestamps each
request and response, and reports the server's compute times); see bench/io/README.md.

Bench and runtime names are stable: the steering side reads them from
bench/results/io/latest.json.

  echo-net    loopback TCP, a task (goroutine, thread) per connection, --conns connections
              opened up front, interactions round-robin over them
  echo-term   the server's stdin/stdout are pipes from/to the driver
  idle-2000   2000 idle connections: the server's CPU and resident memory for them
  idle-19000  19,000 mostly idle connections, each sending a line every 5 s (the descriptor
              limit caps the count, see _IDLE_CONNS): server RSS and CPU
  echo-saturated-1000
              1000 connections, each keeping one request outstanding (closed loop, two driver
              threads): requests/s, latency p50/p99

The last two run the server-scale peers, no compute kernel: promptly-co-epoll and
promptly-co-io_uring (the echo program with a co::task per connection, runtime_config's
reactor backend chosen by PROMPTLY_IO_BACKEND, runtime_config::idle_yield_bound 2 as docs/io.md
advises for many idle connections), go (a goroutine per connection) and tokio
(bench/rust/src/bin/echo.rs: a Tokio task per connection, --workers runtime threads).

Metrics: latency_us_p50/p95/p99/max (request sent -> echo received, over the measured loaded
phases), compute_slowdown (median compute time under interaction / alone, both measured in the
same process, alternating), interactions, dropped (no answer within drain-ms after the end).
region_s is the median compute time under interaction.

Runtimes: promptly-oblivious / promptly-prompt / promptly-aps / promptly-fair (one echo program:
interaction at level 0, fib at level 1, runtime_config::policy = oblivious (levels ignored),
prompt, aps or fair), go (goroutines + net), tbb (compute in a low-priority task_arena, each
line handled in a high-priority arena by a dedicated blocking thread per connection), os-nice
(compute on a nice-19 std::thread pool, a nice-0 thread per connection).

promptly-fair runs the fairness criterion 100-0, winner-take-all (params.criterion): the
fairly prompt paper's Table 5 runs "the Fibonacci-network benchmark", interaction and fib on
two priorities with no time sink, and its response times (2.5-2.7 ms on 1 to 70 cores) are
those of its winner-take-all benchmark of Table 3 (Sec. 6.2.4: the interaction is always the
primary priority, the computation runs only while no interaction is ready). Under 100-0 every
worker's primary level is the interaction's and fib gets the cycles it leaves idle, so this is
the fair policy doing what prompt does, by its own mechanism (rounds, donation).
"""

from functools import lru_cache


@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


# runtime -> (server program, Promptly policy or None)
_SERVERS = {
    "promptly-oblivious": ("cmake:bench_io_echo_promptly", "oblivious"),
    "promptly-prompt": ("cmake:bench_io_echo_promptly", "prompt"),
    "promptly-aps": ("cmake:bench_io_echo_promptly", "aps"),
    "promptly-fair": ("cmake:bench_io_echo_promptly", "fair"),
    "go": ("go:echo", None),
    "tbb": ("cmake:bench_io_echo_tbb", None),
    "os-nice": ("cmake:bench_io_echo_osnice", None),
}
# The fair policy's criterion (interaction-compute weights): winner-take-all, see above.
_FAIR_CRITERION = "100-0"


def _runtimes():
    out = {}
    for name, (server, policy) in _SERVERS.items():
        r = {"exe": "cmake:bench_io_driver", "params": {"server": server}}
        if policy is not None:
            r["params"]["policy"] = policy
            r["args"] = ["--policy", policy]
        if policy == "fair":
            r["params"]["criterion"] = _FAIR_CRITERION
            r["args"] += ["--server-args", f"--criterion {_FAIR_CRITERION}"]
        if name == "go":
            r["env"] = {"GOMAXPROCS": "{workers}"}
        out[name] = r
    return out


_ECHO_ARGS = ["--server", "{server}", "--mode", "{mode}", "--rate", "{rate}", "--conns", "{conns}",
              "--n", "{n}", "--cutoff", "{cutoff}", "--min-loaded-ms", "{min_loaded_ms}"]
# On two workers here fib(41) with cutoff 16 takes about 0.35 s in the C++ runtimes and 1.8 s in
# Go (gcc's fib is about 4x faster than Go's, see bench/README.md, suite `core`); fib(39) about
# 0.15 s and 0.7 s. The servers repeat the kernel until the measured loaded runs add up to
# min_loaded_ms, so every runtime answers a few hundred interactions (full: 2.5 s x 3 rounds at
# 50/s) or about 80 (quick). 2.5 s rather than 4 s keeps the whole suite, with the server-scale
# benches, under 10 minutes at --reps 3.
_ECHO_PARAMS = {"rate": 50, "conns": 8, "n": 41, "cutoff": 16, "min_loaded_ms": 2500}
_ECHO_QUICK = {"n": 39, "min_loaded_ms": 1500}
_ECHO_SHOW = ["latency_us_p50", "latency_us_p95", "latency_us_p99", "latency_us_max", "compute_slowdown",
              "interactions", "dropped"]
_ECHO_PLOT = ["latency_us_p99", "latency_us_max", "compute_slowdown"]

# The server-scale benches: many connections served by coroutines (Promptly's co::task per
# connection on either reactor backend), goroutines and Tokio tasks; no compute kernel.
_SCALE_SERVERS = {
    "promptly-co-epoll": ("cmake:bench_io_echo_promptly", "epoll"),
    "promptly-co-io_uring": ("cmake:bench_io_echo_promptly", "io_uring"),
    "go": ("go:echo", None),
    "tokio": ("cargo:echo", None),
}


def _scale_runtimes():
    out = {}
    for name, (server, backend) in _SCALE_SERVERS.items():
        r = {"exe": "cmake:bench_io_driver", "params": {"server": server}, "env": {}}
        if backend is not None:
            r["params"]["backend"] = backend
            # idle_yield_bound 2: what docs/io.md ("Idle CPU") advises for many idle connections.
            r["args"] = ["--policy", "oblivious", "--server-args", "--handler coroutine --idle-yield-bound 2"]
            r["env"]["PROMPTLY_IO_BACKEND"] = backend
        if name == "go":
            r["env"]["GOMAXPROCS"] = "{workers}"
        out[name] = r
    return out


# The descriptor limit caps the idle bench: the driver raises its soft limit to the hard limit
# (20,000 here; raising the hard limit needs CAP_SYS_RESOURCE, which this machine's processes
# lack) and the server inherits it, so one server process holds at most about 19,990
# connections. Ports do not bind first: one client address reaches about 28,000 ephemeral ports
# per server address and port.
_IDLE_CONNS = 19000

SUITE = {
    "name": "io",
    "title": "I/O: echo latency under a saturating compute kernel (the fairly prompt paper Sec. 6.2.1, Table 5)",
    "runtime_order": ["promptly-oblivious", "promptly-prompt", "promptly-aps", "promptly-fair",
                      "promptly-co-epoll", "promptly-co-io_uring", "go", "tokio", "tbb", "os-nice"],
    "benches": [
        {
            "name": "echo-net",
            "title": "network echo (loopback TCP, task per connection) at 50/s while fib runs on all workers",
            "params": {**_ECHO_PARAMS, "mode": "net"},
            "quick_params": _ECHO_QUICK,
            "workers": [2],
            "args": _ECHO_ARGS,
            # in-process repetitions [warm-up, timed]: each is one alone + one loaded compute run
            "inner": [1, 3],
            "quick_inner": [1, 2],
            "runtimes": _runtimes(),
            "baseline": "promptly-oblivious",
            "expected": lambda p: fib(p["n"]),
            "show": _ECHO_SHOW,
            "plot": _ECHO_PLOT,
            "timeout_s": 300,
            "quick_timeout_s": 60,
        },
        {
            "name": "echo-term",
            "title": "terminal echo (pipes to the server's stdin/stdout) at 50/s while fib runs on all workers",
            "params": {**_ECHO_PARAMS, "mode": "term", "conns": 1},
            "quick_params": _ECHO_QUICK,
            "workers": [2],
            "args": _ECHO_ARGS,
            "inner": [1, 3],
            "quick_inner": [1, 2],
            "runtimes": _runtimes(),
            "baseline": "promptly-oblivious",
            "expected": lambda p: fib(p["n"]),
            "show": _ECHO_SHOW,
            "plot": _ECHO_PLOT,
            "timeout_s": 300,
            "quick_timeout_s": 60,
        },
        {
            "name": "idle-2000",
            "title": "2000 idle connections: server CPU and resident memory (target < 1% of a core, < 200 MiB)",
            "params": {"idle_conns": 2000, "idle_ms": 1000},
            "quick_params": {"idle_ms": 1000},
            "workers": [2],
            "args": ["--server", "{server}", "--mode", "idle", "--idle-conns", "{idle_conns}",
                     "--idle-ms", "{idle_ms}"],
            "inner": [0, 1],
            "runtimes": _runtimes(),
            "baseline": "promptly-oblivious",
            "expected": lambda p: p["idle_conns"],
            "show": ["idle_cpu_pct", "idle_rss_mib", "idle_kib_per_conn"],
            "plot": ["idle_cpu_pct", "idle_rss_mib"],
            "timeout_s": 120,
            "quick_timeout_s": 60,
        },
        {
            "name": f"idle-{_IDLE_CONNS}",
            "title": f"{_IDLE_CONNS} mostly idle connections, each sending a line every 5 s: server CPU and "
                     "resident memory (targets: RSS and CPU <= Go's)",
            "params": {"idle_conns": _IDLE_CONNS, "idle_ms": 5000, "idle_line_ms": 5000},
            "quick_params": {"idle_conns": 2000, "idle_ms": 2000, "idle_line_ms": 1000},
            "workers": [2],
            "args": ["--server", "{server}", "--mode", "idle", "--idle-conns", "{idle_conns}",
                     "--idle-ms", "{idle_ms}", "--idle-line-ms", "{idle_line_ms}"],
            "inner": [0, 1],
            "runtimes": _scale_runtimes(),
            "baseline": "go",
            "expected": lambda p: p["idle_conns"],
            "show": ["idle_cpu_pct", "idle_rss_mib", "idle_kib_per_conn"],
            "plot": ["idle_cpu_pct", "idle_rss_mib"],
            "timeout_s": 120,
            "quick_timeout_s": 60,
        },
        {
            "name": "echo-saturated-1000",
            "title": "echo at 1000 connections, each with a request outstanding at all times: requests/s and "
                     "latency (target: requests/s >= Go's and Tokio's)",
            "params": {"conns": 1000, "echo_ms": 2000},
            "quick_params": {"conns": 200, "echo_ms": 1000},
            "workers": [2],
            "args": ["--server", "{server}", "--mode", "saturate", "--conns", "{conns}", "--echo-ms",
                     "{echo_ms}"],
            "inner": [0, 1],
            "runtimes": _scale_runtimes(),
            "baseline": "go",
            "expected": lambda p: p["conns"],
            "show": ["requests_per_s", "latency_us_p50", "latency_us_p99", "server_cpu_pct"],
            "plot": ["requests_per_s", "latency_us_p99"],
            "timeout_s": 120,
            "quick_timeout_s": 60,
        },
    ],
}
