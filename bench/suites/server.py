"""Suite `server`: the job server's own overheads (AMCilk Sec. 5.1: starting and removing a job),
its submission throughput over the Unix socket, the memory of a queued job, and `stats` under
10x overload. One program, tools/bench_server/main.cpp (cmake target bench_server_promptly),
drives build/bench/bin/promptlyd as a child process over protocol version 1 (docs/server.md).
Core-reallocation latency and mugging vs. stealing are measured elsewhere (the policy suites).

Targets (from the job-server requirement): start p50 <= 20 us, p99 <= 200 us; remove <= 10 us;
>= 20,000 trivial jobs/s over the Unix socket with none lost; <= 2 KiB per idle queued job;
`stats` answered within 100 ms under 10x overload. Bench and runtime names are stable.
"""

_RUNTIMES = {"promptly": {"exe": "cmake:bench_server_promptly"}}
_ARGS = ["--what", "{what}", "--n", "{n}", "--max-running", "{max_running}", "--seconds", "{seconds}"]


def _bench(name, title, params, quick_params, show, expected=True, inner=(0, 3), quick_inner=(0, 1)):
    b = {
        "name": name,
        "title": title,
        "params": {"max_running": 64, "seconds": 3, **params},
        "quick_params": quick_params,
        "workers": [2],
        "args": _ARGS,
        "inner": list(inner),
        "quick_inner": list(quick_inner),
        "runtimes": _RUNTIMES,
        "show": show,
        "plot": show[:1],
        "timeout_s": 600,
    }
    if expected:
        b["expected"] = lambda p: p["n"]
    else:
        b["expected"] = lambda p: "all stats answered"
    return b


SUITE = {
    "name": "server",
    "title": "Job server (promptlyd): start/remove overhead, submission throughput, queued-job memory, stats under overload",
    "runtime_order": ["promptly"],
    "benches": [
        _bench("server-throughput-mr4",
               "10^5 trivial jobs (fib 0) pipelined with wait:true over 4 Unix-socket connections, "
               "at most 4 running; answer = jobs done (none lost or rejected)",
               {"what": "throughput", "n": 100_000, "max_running": 4}, {"n": 10_000},
               ["jobs_per_s", "jobs_per_s_best", "rejected", "lost"]),
        _bench("server-throughput-mr64",
               "the same with at most 64 running (the default)",
               {"what": "throughput", "n": 100_000, "max_running": 64}, {"n": 10_000},
               ["jobs_per_s", "jobs_per_s_best", "rejected", "lost"]),
        _bench("server-start-remove",
               "10^5 trivial jobs one at a time: start (start decision -> root task running), "
               "remove (pool removal), client round trip",
               {"what": "start", "n": 100_000}, {"n": 5_000},
               ["start_p50_us", "start_p99_us", "start_max_us", "remove_p50_us", "remove_p99_us",
                "remove_max_us", "rtt_p50_us", "rtt_p99_us"], inner=(0, 1)),
        _bench("server-queued-memory",
               "RSS growth of promptlyd per queued trivial job (2 x 10^4 queued behind one running job)",
               {"what": "memory", "n": 20_000}, {"n": 5_000},
               ["rss_bytes_per_queued_job", "rss_bytes_per_queued_job_max"], inner=(0, 3)),
        _bench("server-overload",
               "bing jobs arriving at 10x the workers' capacity for 3 s, at most 8 running + 64 queued; "
               "a client asks stats every 10 ms",
               {"what": "overload", "n": 0, "max_running": 8}, {"seconds": 1},
               ["stats_p50_ms", "stats_p99_ms", "stats_max_ms", "rejected_fraction", "offered_jobs_per_s"],
               expected=False, inner=(0, 1)),
    ],
}
