"""Suite `priority`: priority levels and Adaptive Priority Scheduling (I-Cilk, SPAA 2020, Sec. 5.1).

Bench and runtime names are stable: the steering side reads them from
bench/results/priority/latest.json. The format of this file is described in bench/README.md; the
suite itself in its section "Suite `priority`".

Pairs are identified by (bench, runtime, workers). `promptly-aps` is Promptly's variant of APS and
`promptly-aps-exact` the paper's rule exactly (runtime_config::aps.exact; docs/priorities.md,
"APS: the paper's rule and ours"), both at rho = 2, L = 500 us, delta = 0.9 (the library's
defaults). The rho, L and delta sweeps of aps (I-Cilk's Figs. 3 and 4, and delta) are runtimes of
their own (`promptly-aps-rho1.2`, `promptly-aps-L100us`, `promptly-aps-delta0.75`, ...) with the
values in `params`, in the separate suite `priority_sweep` (bench/suites/priority_sweep.py,
results in bench/results/priority_sweep/), so that each suite finishes in under 10 minutes at
--reps 3; `promptly-aps` itself is the sweeps' missing point.

fib-rp is restricted parallelism chosen for 2 workers: the root of each level forks once, into
exactly two serial strands, fib(n-1) and fib(n-2) (--base n). A level's parallelism is then
fib(n)/fib(n-1) = 1.6, below P = 2: it keeps both workers busy only while its shorter strand runs,
so aps's desire for it oscillates between 1 and 2 as the paper describes for its fib-rp, while the
three levels together have 6 strands for 2 workers (the paper: 8 strands per level on 20 cores,
three levels together about P). One strand would be no parallelism at all, and three (--base n-1,
what this suite ran before: fib(n-1) forks again) have parallelism fib(n)/fib(n-2) = 2.6 > P, not
restricted on 2 workers. fib-rp also runs at 1 worker (oblivious, prompt, aps): the cost of the
policies where there is nothing to share (I-Cilk's one-core runs, Fig. 4).

Time at --reps 3 on 2 cores (1 warm-up round + 3 measured rounds per pair), about 9.7 minutes:
latency-under-load ~54 s per runtime (7 runtimes), fib-ep ~22 s per runtime (4), fib-rp ~10 s per
runtime at 2 workers (4) and ~18 s at 1 worker (3). To make room for promptly-aps-exact (2 workers
only: fib-ep, fib-rp, latency-under-load, ~85 s) and the 1-worker fib-rp rows (~55 s), two things
were cut: the 8-worker (oversubscribed) promptly-aps rows of fib-ep and fib-rp (~65 s; they showed
how a policy behaves when the OS preempts its workers, bench/README.md; the last run with them is
in the git history of bench/results/priority/), and fib-rp's size, fib(43) to fib(40) (two strands
of fib(39) and fib(38) instead of three of 41/40/41, ~75 s).

The latency against long serial strands (preempt, preempt-server) is the suite `preempt`
(bench/suites/preempt.py): with it this suite took about 15 minutes.
"""

import importlib.util
import shutil
import sys
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=None)
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


class _Any:
    """Matches any value in an `expected` answer: the job checksum is checked by the programs
    (every job against its serial computation) and across runtimes by the harness, not here."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __repr__(self):
        return "<checked across runtimes>"


# Where the aps program of each fib bench writes the allotment trace of one extra (untimed)
# three-level run; bench/priority/plot_allotment.py turns it into the timeline plot.
TRACE = "/tmp/promptly-bench/priority/allotment-{bench}-w{workers}.csv"


def allotment_plots(out_dir, results):
    """The allotment timeline plots: for every `promptly-aps` result of a fib bench,
    copies its trace (TRACE, written by the program's extra traced run) into out_dir as
    allotment-BENCH-wW.csv (+ .json) and renders allotment-BENCH-wW.png with
    bench/priority/plot_allotment.py. When the trace in /tmp is gone (e.g. a re-render from
    latest.json), the copy already in out_dir is used. Returns {plot name: PNG file name}.

    Called by the harness after its own plots, if it supports the suite-level key
    "extra_plots"; by hand: python3 bench/priority/plot_allotment.py TRACE.csv --out DIR."""
    path = Path(__file__).resolve().parents[1] / "priority" / "plot_allotment.py"
    spec = importlib.util.spec_from_file_location("promptly_plot_allotment", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out_dir = Path(out_dir)
    written = {}
    for r in results:
        if r["runtime"] != "promptly-aps" or not r["bench"].startswith("fib-"):
            continue
        name = f"allotment-{r['bench']}-w{r['params']['workers']}"
        src = Path(TRACE.format(bench=r["bench"], workers=r["params"]["workers"]))
        csv = out_dir / f"{name}.csv"
        if src.is_file():
            out_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, csv)
            if Path(f"{src}.json").is_file():
                shutil.copyfile(f"{src}.json", f"{csv}.json")
        if not csv.is_file():
            print(f"warning: no allotment trace for {name} ({src})", file=sys.stderr)
            continue
        if mod.plot_allotment(csv, out_dir / f"{name}.png"):
            written[name] = f"{name}.png"
    return written


def _promptly(policy, workers, rho=2.0, quantum_us=500, delta=0.9, exact=False, trace=None):
    r = {
        "exe": "cmake:bench_prio_fib_promptly",
        "params": {"policy": policy, "rho": rho, "quantum_us": quantum_us, "delta": delta, "aps_exact": exact},
        "workers": workers,
    }
    args = []
    if exact:
        args += ["--aps-exact", "1"]
    if trace:
        args += ["--trace", trace]
    if args:
        r["args"] = args
    return r


def _fib_runtimes(bench, one_worker=False):
    """fib-ep / fib-rp of this suite: 2 workers, and 1 worker too where `one_worker` (fib-rp)
    except for promptly-aps-exact (2 workers only, to keep the suite under 10 minutes)."""
    w = [1, 2] if one_worker else [2]
    return {
        "promptly-oblivious": _promptly("oblivious", w),
        "promptly-prompt": _promptly("prompt", w),
        "promptly-aps": _promptly("aps", w, trace=TRACE.replace("{bench}", bench)),  # {workers} stays
        "promptly-aps-exact": _promptly("aps", [2], exact=True),
    }


def sweep_runtimes():
    """The aps sweeps of suite `priority_sweep`, around promptly-aps (rho = 2, L = 500 us, delta = 0.9)."""
    return {
        "promptly-aps": _promptly("aps", [2]),
        # Fig. 3 of I-Cilk (rho = 2 is promptly-aps)
        "promptly-aps-rho1.2": _promptly("aps", [2], rho=1.2),
        "promptly-aps-rho1.5": _promptly("aps", [2], rho=1.5),
        "promptly-aps-rho1.75": _promptly("aps", [2], rho=1.75),
        # Fig. 4 (L = 500 us is promptly-aps)
        "promptly-aps-L100us": _promptly("aps", [2], quantum_us=100),
        "promptly-aps-L1ms": _promptly("aps", [2], quantum_us=1000),
        "promptly-aps-L10ms": _promptly("aps", [2], quantum_us=10000),
        # delta (0.9 is promptly-aps): the paper finds it matters little above 0.75 (Sec. 5.1,
        # "Discussion"); on fib-rp a level at 2 workers has utilization about 0.8, so delta
        # decides whether its second worker counts as efficient.
        "promptly-aps-delta0.5": _promptly("aps", [2], delta=0.5),
        "promptly-aps-delta0.75": _promptly("aps", [2], delta=0.75),
        "promptly-aps-delta0.99": _promptly("aps", [2], delta=0.99),
    }


_FIB_ARGS = ["--n", "{n}", "--base", "{base}", "--policy", "{policy}", "--rho", "{rho}",
             "--delta", "{delta}", "--quantum-us", "{quantum_us}"]
_FIB_SHOW = ["H_over_ideal", "M_over_ideal", "L_over_ideal", "ideal_policy_over_ideal", "run_util"]


def fib_bench(name, title, n, base, quick_n, quick_base, runtimes=None):
    return {
        "name": name,
        "title": title,
        "params": {"n": n, "base": base},
        "quick_params": {"n": quick_n, "base": quick_base},
        "args": _FIB_ARGS,
        # one repetition = fib-ideal (oblivious) + fib alone (policy) + the three levels: ~5 fibs
        "inner": [1, 3],
        "quick_inner": [0, 1],
        "runtimes": runtimes if runtimes is not None else _fib_runtimes(name, one_worker=name == "fib-rp"),
        "baseline": "promptly-oblivious" if runtimes is None else "promptly-aps",
        "expected": lambda p: [fib(p["n"])] * 3,
        "show": _FIB_SHOW,
        "plot": ["H_over_ideal", "M_over_ideal", "L_over_ideal"],
        "timeout_s": 300,
    }


# The two fib benches, shared with suite priority_sweep: (title, n, base, quick n, quick base).
FIB_EP = ("fib(n) at H, M, L submitted back to back; fork down to n = 2 (ample parallelism); "
          "region = all three", 37, 2, 32, 2)
FIB_RP = ("fib(n) at H, M, L submitted back to back; each root forks once into two serial strands, "
          "fib(n-1) and fib(n-2) (parallelism 1.6 per level on 2 workers: restricted); "
          "region = all three", 40, 40, 35, 35)


SUITE = {
    "name": "priority",
    "title": "Priority levels: fib-ep / fib-rp (I-Cilk Sec. 5.1) and latency under load",
    # Not (yet) a harness key: the allotment timeline plots, see allotment_plots().
    "extra_plots": allotment_plots,
    "runtime_order": ["promptly-oblivious", "promptly-prompt", "promptly-aps", "promptly-aps-exact", "tbb-arenas",
                      "os-nice", "go"],
    "benches": [
        fib_bench("fib-ep", *FIB_EP),
        fib_bench("fib-rp", *FIB_RP),
        {
            "name": "latency-under-load",
            "title": "a 50 us job (root + 4 subtasks) at high priority every 10 ms under a "
                     "low-priority fib(36) background; region = p99 latency",
            "params": {"n": 36, "cutoff": 16, "root_iters": 5000, "sub_iters": 5000,
                       "period_us": 10000, "window_jobs": 100, "windows": 6, "floor_jobs": 100},
            "quick_params": {"window_jobs": 50, "windows": 2, "floor_jobs": 30},
            "workers": [2],
            "args": ["--n", "{n}", "--cutoff", "{cutoff}", "--root-iters", "{root_iters}",
                     "--sub-iters", "{sub_iters}", "--period-us", "{period_us}",
                     "--window-jobs", "{window_jobs}", "--windows", "{windows}",
                     "--floor-jobs", "{floor_jobs}"],
            # one repetition is the whole alternating-window experiment (~14 s; ~3 s with --quick)
            "inner": [0, 1],
            "quick_inner": [0, 1],
            "runtimes": {
                "promptly-oblivious": {"exe": "cmake:bench_prio_latency_promptly",
                                       "args": ["--policy", "oblivious"], "params": {"policy": "oblivious"}},
                "promptly-prompt": {"exe": "cmake:bench_prio_latency_promptly",
                                    "args": ["--policy", "prompt"], "params": {"policy": "prompt"}},
                "promptly-aps": {"exe": "cmake:bench_prio_latency_promptly",
                                 "args": ["--policy", "aps", "--rho", "2", "--quantum-us", "500"],
                                 "params": {"policy": "aps", "rho": 2.0, "quantum_us": 500}},
                "promptly-aps-exact": {"exe": "cmake:bench_prio_latency_promptly",
                                       "args": ["--policy", "aps", "--rho", "2", "--quantum-us", "500",
                                                "--aps-exact", "1"],
                                       "params": {"policy": "aps", "rho": 2.0, "quantum_us": 500,
                                                  "aps_exact": True}},
                "tbb-arenas": {"exe": "cmake:bench_prio_latency_tbb"},
                "os-nice": {"exe": "cmake:bench_prio_latency_osnice"},
                "go": {"exe": "go:priolatency", "env": {"GOMAXPROCS": "{workers}"}},
            },
            "baseline": "promptly-oblivious",
            "expected": lambda p: {"jobs": p["floor_jobs"] + p["windows"] * p["window_jobs"],
                                   "fib": fib(p["n"]), "checksum": _Any()},
            "show": ["latency_us_p50", "latency_us_p99", "latency_us_max", "background_slowdown",
                     "floor_us_p50", "floor_us_p99", "job_work_us", "run_util"],
            "plot": ["latency_us_p50", "background_slowdown"],
            "timeout_s": 120,
            "quick_timeout_s": 60,
        },
    ],
}
