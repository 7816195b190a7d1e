"""Suite `preempt`: urgent latency against less urgent work whose serial strands never reach a
strand boundary (1, 5, 20, 100 ms), beside the boundary-rich fib reference; and a user's shape, a TCP
line service beside a parallel sort with a serial merge. Split from suite `priority` (which shares
its latency programs, bench/priority/) so that each finishes in under 10 minutes at --reps 3: this
one takes about 5 (preempt ~4 min for its 6 runtimes, preempt-server ~1 min). The rows are what a
preemption mechanism must beat (docs/priorities.md, "Long strands").
"""

import importlib.util
import re
from pathlib import Path

_spec = importlib.util.spec_from_file_location("promptly_suite_priority_base", Path(__file__).with_name("priority.py"))
_priority = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_priority)
_Any = _priority._Any


# ---- preempt: urgent latency against long serial strands (bench/priority/preempt_driver.hpp) ----

PREEMPT_BACKGROUNDS = ["fib", "1", "5", "20", "100"]   # fib: the boundary-rich reference; strands in ms
PREEMPT_POLICIES = ["prompt", "aps", "fair"]


def _preemption_knob():
    """True once runtime_config has the preemption knob (a member `preemption`): the bench then
    also runs every Promptly policy with it on and off (rows promptly-POLICY-preempt and
    promptly-POLICY-nopreempt; the program's --preemption 1/0, bench/priority/promptly_latency.cpp,
    set_preemption). Until then the promptly-POLICY rows are the runtime without preemption."""
    cfg = Path(__file__).resolve().parents[2] / "include" / "promptly" / "config.hpp"
    try:
        return re.search(r"^\s*[\w:<>]+\s+preemption\b", cfg.read_text(), re.M) is not None
    except OSError:
        return False


def _promptly_preempt_rows(exe):
    """The Promptly rows of a preempt bench: prompt, aps, fair; with and without preemption once
    the knob exists (_preemption_knob)."""
    def promptly(policy, preemption=None):
        args = ["--policy", policy]
        params = {"policy": policy}
        if preemption is not None:
            args += ["--preemption", str(int(preemption))]
            params["preemption"] = preemption
        return {"exe": exe, "args": args, "params": params}

    rts = {}
    for pol in PREEMPT_POLICIES:
        if _preemption_knob():
            rts[f"promptly-{pol}-nopreempt"] = promptly(pol, False)
            rts[f"promptly-{pol}-preempt"] = promptly(pol, True)
        else:
            rts[f"promptly-{pol}"] = promptly(pol)
    return rts


def _preempt_runtimes():
    rts = _promptly_preempt_rows("cmake:bench_prio_latency_promptly")
    rts["go"] = {"exe": "go:priolatency", "env": {"GOMAXPROCS": "{workers}"}}
    rts["tbb-arenas"] = {"exe": "cmake:bench_prio_latency_tbb"}
    rts["os-nice"] = {"exe": "cmake:bench_prio_latency_osnice"}
    return rts


def _bg_key(b):
    return "fib" if b == "fib" else f"s{b}ms"


def preempt_table(results):
    """Per background (fib, then strand length): urgent p50 and p99 (median of the rounds, min-max),
    p99 over the same runtime's p99 against fib (the issue's "<= 2x" target), p99 over os-nice's p99
    against the same background, and the background's throughput with urgent work over without."""
    rs = {r["runtime"]: r for r in results if r["bench"] == "preempt"}
    if not rs:
        return ("preempt: urgent latency per background", "", [], [])

    def cell(r, m, scale=1e-3, digits=2):
        s = r["metrics"].get(m)
        if s is None:
            return "–"
        f = f"{{:.{digits}f}}"
        return f"{f.format(s['median'] * scale)} ({f.format(s['min'] * scale)}–{f.format(s['max'] * scale)})"

    def med(r, m):
        s = r and r["metrics"].get(m)
        return s["median"] if s else None

    order = [rt for rt in _RUNTIME_ORDER if rt in rs] + sorted(set(rs) - set(_RUNTIME_ORDER))
    rows = []
    for b in PREEMPT_BACKGROUNDS:
        k = _bg_key(b)
        for rt in order:
            r = rs[rt]
            if f"p99_us_{k}" not in r["metrics"]:
                continue  # not measured (--quick runs fewer backgrounds)
            p99, fib99, nice99 = med(r, f"p99_us_{k}"), med(r, "p99_us_fib"), med(rs.get("os-nice"), f"p99_us_{k}")
            rows.append([
                "fib (reference)" if b == "fib" else f"{b} ms", rt, cell(r, f"p50_us_{k}"), cell(r, f"p99_us_{k}"),
                f"{p99 / fib99:.2f}" if p99 and fib99 else "–",
                f"{p99 / nice99:.2f}" if p99 and nice99 else "–",
                cell(r, f"bg_kept_{k}", 1.0, 3), cell(r, f"bg_cores_{k}", 1.0, 2) if b != "fib" else "–",
            ])
    text = ("Urgent latency in ms, median of the measured rounds (min–max). `p99/fib`: this runtime's p99 over "
            "its own p99 against the fib background; `p99/nice`: over os-nice's p99 against the same background. "
            "`bg kept`: background progress while urgent jobs arrive over progress without them. `bg cores`: "
            "background progress without urgent work in cores' worth of calibrated spin.")
    header = ["background", "runtime", "urgent p50 ms", "urgent p99 ms", "p99/fib", "p99/nice", "bg kept",
              "bg cores"]
    return ("preempt: urgent latency per background", text, header, rows)


PREEMPT_BENCH = {
    "name": "preempt",
    "title": "a 50 us urgent job (root + 4 subtasks) every 10 ms under a saturating less urgent background: "
             "fib (boundary-rich) or rounds of 2 x workers serial strands of 1, 5, 20, 100 ms; region = the worst "
             "urgent p99 over the strand lengths",
    "params": {"backgrounds": ",".join(PREEMPT_BACKGROUNDS), "n": 32, "cutoff": 16, "root_iters": 5000,
               "sub_iters": 5000, "period_us": 10000, "window_jobs": 100, "floor_jobs": 50, "settle_ms": 100,
               "without_ms": 300},
    "quick_params": {"backgrounds": "fib,1,20", "window_jobs": 30, "floor_jobs": 10, "without_ms": 100},
    "workers": [2],
    "args": ["--protocol", "preempt", "--backgrounds", "{backgrounds}", "--n", "{n}", "--cutoff", "{cutoff}",
             "--root-iters", "{root_iters}", "--sub-iters", "{sub_iters}", "--period-us", "{period_us}",
             "--window-jobs", "{window_jobs}", "--floor-jobs", "{floor_jobs}", "--settle-ms", "{settle_ms}",
             "--without-ms", "{without_ms}"],
    # one repetition is every background in turn (~9 s; ~2 s with --quick)
    "inner": [0, 1],
    "quick_inner": [0, 1],
    "runtimes": _preempt_runtimes(),
    "baseline": "os-nice",
    "expected": lambda p: {"jobs": p["floor_jobs"] + len(p["backgrounds"].split(",")) * p["window_jobs"],
                           "checksum": _Any(), "backgrounds": p["backgrounds"]},
    "show": [f"p99_us_{_bg_key(b)}" for b in PREEMPT_BACKGROUNDS] + ["floor_p99_us", "run_util"],
    "plot": [f"p99_us_{_bg_key(b)}" for b in PREEMPT_BACKGROUNDS],
    "timeout_s": 120,
    "quick_timeout_s": 60,
}


PREEMPT_SERVER_BENCH = {
    "name": "preempt-server",
    "title": "a user's shape: a TCP 'fib 22' line service at level 0 (listener + line_reader), one request "
             "every 10 ms from an outside client thread, beside a level-2 loop that sorts 2M ints (halves by "
             "parallel_sort, then one serial std::inplace_merge); region = p99 latency",
    "params": {"sort_n": 2_000_000, "fib_n": 22, "period_us": 10000, "requests": 150, "floor_requests": 50,
               "settle_ms": 200},
    "quick_params": {"requests": 40, "floor_requests": 10},
    "workers": [2],
    "args": ["--sort-n", "{sort_n}", "--fib-n", "{fib_n}", "--period-us", "{period_us}", "--requests",
             "{requests}", "--floor-requests", "{floor_requests}", "--settle-ms", "{settle_ms}"],
    # one repetition: the floor, then the requests beside the sorts (~3 s)
    "inner": [0, 1],
    "quick_inner": [0, 1],
    "runtimes": _promptly_preempt_rows("cmake:bench_prio_server_sort_promptly"),
    "baseline": "promptly-prompt" if not _preemption_knob() else "promptly-prompt-nopreempt",
    "expected": lambda p: {"requests": p["floor_requests"] + p["requests"], "checksum": _Any()},
    "show": ["latency_us_p50", "latency_us_p99", "latency_us_max", "floor_us_p50", "floor_us_p99", "sorts_per_s",
             "merge_ms"],
    "plot": ["latency_us_p99"],
    "timeout_s": 120,
    "quick_timeout_s": 60,
}


_RUNTIME_ORDER = list(dict.fromkeys(["tbb-arenas", "os-nice", "go"] + [
    f"promptly-{p}{v}" for p in PREEMPT_POLICIES for v in ("", "-nopreempt", "-preempt")]))

SUITE = {
    "name": "preempt",
    "title": "Urgent latency against long serial strands (what preemption must beat)",
    "runtime_order": _RUNTIME_ORDER,
    "tables": [preempt_table],
    "benches": [PREEMPT_BENCH, PREEMPT_SERVER_BENCH],
}
