"""Suite `apps`: the papers' applications under load (apps/; I-Cilk Sec. 5.2, and "Responsive
Parallelism with Futures and State" Sec. 5.1).

email-N: the email server of apps/email (README there) with N closed-loop clients, driven by
`email_driver` (apps/email/driver.hpp), which starts the runtime's server as its child, warms
up, resets the server's counters, measures, lets outstanding requests finish, and stops the
server with SIGTERM (a clean exit is required). Same driver, same seeds for every runtime.

The papers ran 30-180 clients against 10 (I-Cilk, SPAA 2020, Fig. 6) or 20 server cores; scaled
to this 2-core machine by 1/5: 6, 18 and 36 clients. The papers' clients each sent 1500
requests; here each run measures a fixed time window instead (3 s after 0.5 s of warm-up), so
a run takes the same time whatever the server's throughput. The driver runs on the same 2
cores as the server (the papers used separate cores).

Runtimes: promptly-aps / -prompt / -fair / -oblivious (one program, apps/email/server_main.cpp,
runtime_config::policy set by --policy; fair with the criterion 40-25-15-10-5-5 over the six
priorities, which favours the client loop and send), go (apps/email/go: goroutines + net,
GOMAXPROCS = workers).

Metrics (stable names): <type>_us_mean / _p50 / _p95 / _p99 for resp (request -> ACK), send,
sort, print (request -> DONE) measured by the driver, compress (a compress task's creation to
its end, measured by the server), missed_periods (compression check periods that passed while
the checker was still busy), periods, throughput_per_s (answered requests per second).
region_s is send_us_p99 in seconds, so the Summary's ratio is a ratio of send p99s against
promptly-oblivious. The driver writes every latency sample of each run to
/tmp/promptly-bench/apps/email-N-RUNTIME.json (the last measured round's stays).

email-36-open: the same server and clients with the driver in open loop (--rate): requests
arrive as a Poisson process of 15,000 per second over the 36 clients whatever the answers, a
client pipelining a request that arrives while its earlier ones are unanswered, and every
latency counts from the time the request was due. A closed loop offers less load to a server
that answers some requests late (aps answers 17,000-24,000 requests/s at 36 closed-loop clients,
oblivious 25,000-27,000), so it compares policies at different loads; the open loop offers each
the same. 15,000/s is about 60% of what the server answers at 36 closed-loop clients on this
2-core machine. Nearer that capacity the priority policies' least urgent requests (prints) wait
longer: in a run at 20,000/s (bench/results/apps/open-loop/rate-20k/) aps's print p99 was
387 ms, connections reached the server's limit of 64 unanswered requests, and 3,105 requests
were refused as busy (metric `refused`: the driver counts refusals, they do not fail the run). 2 s measured per run (30,000
requests), to keep the suite under 10 minutes. Also issue_lag_us_p99: how late the driver wrote
a request after it was due. The driver shares the server's cores, so this lateness is part of
every latency, and it is larger when the server's threads keep both cores busy; so
resp_from_write_us_p99 and send_from_write_us_p99 measure from the write instead (the driver's
lateness in reading the answers stays in).

jserver-L: the job server of apps/jserver (README there) at L% offered utilisation of the 2
workers (50, 70, 95 and 120, the paper's "about 50%, 70%, 95% and >95%"), 1.5 s of Poisson
arrivals per run, then every released job finishes. The program measures each type's serial
work at start and sets one arrival rate for all four types, rate = L/100 * 2 / sum(work).
Metrics per type (mm, fib, sort, sw): <type>_us_mean / _p50 / _p90 / _p95 / _p99 / _max (release
to finish), <type>_throughput_per_s, <type>_work_us; region_s is mm_us_mean (the target: mm's
mean under aps <= 0.5x oblivious at 70%). tbb-arenas is the oneTBB peer (apps/jserver/jserver_tbb.cpp:
a task_arena per job type, arena priorities high / normal / low / low, same kernels).

proxy-N: the caching web proxy of apps/proxy (README there) with N closed-loop clients (the
paper's 36-144 scaled to 2 cores: 8 and 32), each sending 1500 GETs (the paper's count) for
sites drawn uniformly from the origin's 4096, after a warm-up round of 100 per client that fills
the 16 MiB cache (about half the sites fit). `proxy_driver` runs the origin server in its own
process and the proxy as its child. Metrics: resp (request -> the proxy's reaction: its client
loop holds the request and decides how to answer, the papers' resp; stamped by the proxy in an
X-Reacted-At-Ns header from CLOCK_MONOTONIC, which the driver shares; apps/proxy/README.md),
first_byte (request -> first byte of the response; this was resp until 2026-11-24), hit and miss (whole response time, split by X-Cache; also *_ns_per_byte_p50), stats (one
run of the statistics task over the whole cache, measured by the proxy), hit_ratio,
throughput_per_s. region_s is hit_us_p99. go is apps/proxy/go (net/http, a goroutine per
connection, http.Client fetches, the same sharded cache). Like the email driver, the proxy
driver writes every resp, first_byte, hit and miss latency of each run to
/tmp/promptly-bench/apps/proxy-N-RUNTIME.json.

Latency CDFs: after its own plots the harness calls this suite's extra_plots hook,
bench/apps/plot_cdf.py, which draws BENCH-cdf.png for every bench, a panel per request or job
type, a curve per runtime: email and proxy from the samples of the last measured round (a file
is used only if its p50 and p99 are that round's reported ones), the job server from the
quantiles it reports (p50, p90, p95, p99, max, medians over the rounds; it writes no samples).
"""

import importlib.util
from pathlib import Path

_SAMPLES = "/tmp/promptly-bench/apps"


def _cdf_plots(out_dir, results):
    """The suite-level "extra_plots" hook: the latency CDFs (bench/apps/plot_cdf.py)."""
    path = Path(__file__).resolve().parents[1] / "apps" / "plot_cdf.py"
    spec = importlib.util.spec_from_file_location("promptly_apps_plot_cdf", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.cdf_plots(out_dir, results, _SAMPLES)

_EMAIL_SERVERS = {
    "promptly-aps": ("cmake:email_server", "aps"),
    "promptly-prompt": ("cmake:email_server", "prompt"),
    "promptly-fair": ("cmake:email_server", "fair"),
    "promptly-oblivious": ("cmake:email_server", "oblivious"),
    "go": ("go:email", None),
}


def _email_runtimes():
    out = {}
    for name, (server, policy) in _EMAIL_SERVERS.items():
        r = {"exe": "cmake:email_driver", "params": {"server": server, "rt": name}}
        if policy is not None:
            r["params"]["policy"] = policy
            r["args"] = ["--policy", policy]
        else:
            r["env"] = {"GOMAXPROCS": "{workers}"}
        out[name] = r
    return out


_TYPES = ["resp", "send", "sort", "print", "compress"]
_EMAIL_SHOW = ([f"{t}_us_p99" for t in _TYPES] + [f"{t}_us_mean" for t in _TYPES] +
               ["missed_periods", "throughput_per_s"])


def _email_bench(clients, rate=0):
    """email-N (closed loop) or, with a rate, email-N-open (open loop at `rate` requests/s)."""
    name = f"email-{clients}-open" if rate else f"email-{clients}"
    loop = f"open loop at {rate:,} requests/s" if rate else "closed-loop clients"
    return {
        "name": name,
        "title": f"email server, {clients} {loop} (8 KB messages, 40% send / 25% sort / 35% print)",
        # The open loop measures 2 s (30,000 requests at 15,000/s), to keep the suite under 10 min.
        "params": {"clients": clients, "rate": rate, "measure_ms": 2000 if rate else 3000, "warmup_ms": 500},
        "quick_params": {"measure_ms": 1000, "warmup_ms": 200},
        "workers": [2],
        "args": ["--server", "{server}", "--clients", "{clients}", "--rate", "{rate}", "--measure-ms", "{measure_ms}",
                 "--warmup-ms", "{warmup_ms}",
                 "--samples-out", _SAMPLES + f"/{name}-{{rt}}.json"],
        "inner": [1, 1],
        "runtimes": _email_runtimes(),
        "baseline": "promptly-oblivious",
        "expected": lambda p: p["clients"],
        "show": _EMAIL_SHOW + (["refused", "issue_lag_us_p99", "resp_from_write_us_p99", "send_from_write_us_p99"]
                               if rate else []),
        "plot": ["resp_us_p99", "send_us_p99", "print_us_p99", "missed_periods", "throughput_per_s"],
        "timeout_s": 90,
        "quick_timeout_s": 60,
    }


_JSERVER_POLICIES = ["aps", "prompt", "fair", "oblivious"]
_JTYPES = ["mm", "fib", "sort", "sw"]


def _jserver_bench(load):
    return {
        "name": f"jserver-{load}",
        "title": f"job server at {load}% offered utilisation of 2 workers (Poisson arrivals, smallest work first)",
        "params": {"load": load, "duration_ms": 1500},
        "quick_params": {"duration_ms": 600},
        "workers": [2],
        "args": ["--load", "{load}", "--duration-ms", "{duration_ms}",
                 "--samples-out", _SAMPLES + "/jserver-{load}-{rt}.json"],
        "inner": [0, 1],
        "runtimes": {**{f"promptly-{p}": {"exe": "cmake:jserver", "args": ["--policy", p],
                                          "params": {"policy": p, "rt": f"promptly-{p}"}}
                        for p in _JSERVER_POLICIES},
                     "tbb-arenas": {"exe": "cmake:jserver_tbb", "params": {"rt": "tbb-arenas"}}},
        "baseline": "promptly-oblivious",
        "expected": lambda p: "ok",
        "show": ([f"{t}_us_mean" for t in _JTYPES] + [f"{t}_us_p99" for t in _JTYPES] +
                 [f"{t}_throughput_per_s" for t in _JTYPES] + ["jobs"]),
        "plot": ["mm_us_mean", "sw_us_mean", "sw_throughput_per_s"],
        "timeout_s": 120,
        "quick_timeout_s": 60,
    }


_PROXY_POLICIES = ["aps", "prompt", "fair", "oblivious"]


def _proxy_bench(clients):
    return {
        "name": f"proxy-{clients}",
        "title": f"caching web proxy, {clients} closed-loop clients x 1500 requests over 4096 origin sites",
        "params": {"clients": clients, "requests": 1500},
        "quick_params": {"requests": 200},
        "workers": [2],
        "args": ["--server", "{server}", "--clients", "{clients}", "--requests", "{requests}",
                 "--samples-out", _SAMPLES + "/proxy-{clients}-{rt}.json"],
        "inner": [1, 1],
        "runtimes": {**{f"promptly-{p}": {"exe": "cmake:proxy_driver", "args": ["--policy", p],
                                          "params": {"policy": p, "server": "cmake:proxy_server",
                                                     "rt": f"promptly-{p}"}}
                        for p in _PROXY_POLICIES},
                     "go": {"exe": "cmake:proxy_driver", "params": {"server": "go:proxy", "rt": "go"},
                            "env": {"GOMAXPROCS": "{workers}"}}},
        "baseline": "promptly-oblivious",
        "expected": lambda p: p["clients"] * p["requests"],
        "show": ["resp_us_p99", "first_byte_us_p99", "hit_us_p99", "miss_us_p99", "stats_us_p99", "resp_us_p50",
                 "resp_us_mean", "hit_us_mean",
                 "miss_us_mean", "stats_us_mean", "hit_ns_per_byte_p50", "miss_ns_per_byte_p50", "hit_ratio",
                 "throughput_per_s"],
        "plot": ["resp_us_p99", "hit_us_p99", "miss_us_p99", "stats_us_p99"],
        "timeout_s": 120,
        "quick_timeout_s": 60,
    }


SUITE = {
    "name": "apps",
    "title": "The papers' applications under load: email server, job server, caching proxy (I-Cilk Sec. 5.2; futures and state Sec. 5.1)",
    "runtime_order": ["promptly-aps", "promptly-prompt", "promptly-fair", "promptly-oblivious", "go", "tbb-arenas"],
    "extra_plots": _cdf_plots,
    "benches": [_email_bench(6), _email_bench(18), _email_bench(36), _email_bench(36, rate=15000)] +
               [_jserver_bench(load) for load in (50, 70, 95, 120)] +
               [_proxy_bench(8), _proxy_bench(32)],
}
