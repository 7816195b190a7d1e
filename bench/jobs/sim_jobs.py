#!/usr/bin/env python3
"""The `jobs` suite's Bing and finance replays in promptly-sim (docs/simulator.md): the same trace,
arrivals and job sizes as bench/jobs/promptly_jobs.cpp, each job a parallel loop of pieces of
`piece_units` units split in halves (as the job program's loop), one pool per job (the job
server), under each policy's own decision code. Simulated time, so the comparison is free of this
machine's load; the costs are the simulator's defaults (this machine's measurements).

Job sizes: a unit is `unit_us` (0.4 us: the trace's base job of 1600 units is the bench's ~640 us);
at P cores the jobs are scaled by P / 2 (`--scale`), as the trace's jobs are AMCilk's scaled by
1/20 for 2 cores instead of 40. Job i arrives at t_i * E[work] / (rho * P).

Size hints (serpt only): `exact` gives each job its true work; `wrong` the true work with every
third job's (a fixed random third) multiplied or divided by 4 (alternately); `none` no hint (the
policy's prior for every job).

Metrics per run: mean / p50 / p99 flow time (release -> end), start-wait p99 (release -> first
node started: the first core), mean slowdown = flow / max(work / P, span) (the job's time alone on
the machine). Rounds are consecutive windows of `jobs` jobs of the trace.

Usage: sim_jobs.py --sim build/bin/promptly-sim --out DIR [--workers 2] [--jobs 1200] [--rounds 3]
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TRACES = Path(__file__).resolve().parent / "traces"
UNIT_US = 0.4


def read_trace(name):
    head, jobs = {}, []
    for line in (TRACES / f"{name}.trace").read_text().splitlines():
        if line.startswith("# promptly-jobs-trace"):
            for w in line.split()[2:]:
                k, _, v = w.partition("=")
                head[k] = v
        elif line.startswith("#") or not line.strip():
            continue
        else:
            t, units, _seed = line.split()
            jobs.append((float(t), int(units)))
    return float(head["mean_units"]), int(head["piece_units"]), jobs


def loop_nodes(iterations, iteration_us):
    """Binary splitting down to single pieces (promptly-sim's parallel_loop with grain 1), iteratively."""
    nodes = []

    def add(w):
        nodes.append([w, []])
        return len(nodes) - 1

    # Recursive structure built with an explicit stack: returns (entry, exit) per range.
    def build(n):
        if n <= 1:
            x = add(iteration_us * max(n, 1))
            return x, x
        f = add(0.0)
        half = n // 2
        a = build(half)
        b = build(n - half)
        j = add(0.0)
        nodes[f][1] += [a[0], b[0]]
        nodes[a[1]][1].append(j)
        nodes[b[1]][1].append(j)
        return f, j

    sys.setrecursionlimit(10000)
    build(iterations)
    return nodes


def job_list(trace, rho, workers, first, count, scale, hints, seed=11):
    """(release_us, work_us, pieces, piece_us, hint_us or None) of each job of the window."""
    mean_units, piece_units, jobs = read_trace(trace)
    window = jobs[first:first + count]
    t0 = window[0][0]
    mean_work_us = mean_units * UNIT_US * scale
    rng = random.Random(seed)
    wrong = set(rng.sample(range(len(window)), len(window) // 3))
    out = []
    flip = False
    for i, (t, units) in enumerate(window):
        pieces = max(1, round(units * scale / piece_units))
        work = pieces * piece_units * UNIT_US
        hint = None
        if hints == "exact":
            hint = work
        elif hints == "wrong":
            hint = work
            if i in wrong:
                hint = work * 4 if flip else work / 4
                flip = not flip
        out.append(((t - t0) * mean_work_us / (rho * workers), work, pieces, piece_units * UNIT_US, hint))
    return out


def make_workload(trace, rho, workers, first, count, scale, hints, seed=11):
    reqs = []
    for release, _work, pieces, piece_us, hint in job_list(trace, rho, workers, first, count, scale, hints, seed):
        r = {"pool": 0, "release_us": release, "kind": "job", "nodes": loop_nodes(pieces, piece_us)}
        if hint is not None:
            r["size_hint_us"] = hint
        reqs.append(r)
    return {"format": "promptly-sim-workload-1", "pools": 1, "requests": reqs}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(sim, wl_path, workers, policy, extra):
    out = subprocess.run([sim, "run", "--workload", wl_path, "--workers", str(workers), "--policy", policy,
                          "--pool-per-request"] + extra, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    if not r.get("completed", True):
        raise RuntimeError(f"{policy}: {r.get('problem')}")
    flows, waits, slows = [], [], []
    for q in r["requests"]:
        f = q["finish_us"] - q["release_us"]
        flows.append(f)
        waits.append(q["start_us"] - q["release_us"])
        slows.append(f / max(q["work_us"] / workers, q["span_us"]))
    return {"flow_ms_mean": statistics.mean(flows) / 1e3, "flow_ms_p50": pct(flows, 0.5) / 1e3,
            "flow_ms_p99": pct(flows, 0.99) / 1e3, "start_wait_ms_p99": pct(waits, 0.99) / 1e3,
            "slowdown_mean": statistics.mean(slows)}


# (row label, policy, hints, extra promptly-sim arguments)
VARIANTS = [
    ("serpt", "serpt", "exact", []),
    ("serpt-wrong-third", "serpt", "wrong", []),
    ("serpt-no-hints", "serpt", "none", []),
    ("serpt-cap8", "serpt", "exact", ["--serpt-slowdown-cap", "8"]),
    ("serpt-p0.8", "serpt", "exact", ["--serpt-speedup-exponent", "0.8"]),
    ("drep", "drep", "none", []),
    ("drep-steal-boundary", "drep-steal-boundary", "none", []),
    ("equi", "equi", "none", []),
    ("asteal", "asteal", "none", []),
    ("prompt", "prompt", "none", []),
]


def variant(name):
    """A VARIANTS row, or a serpt row spelled serpt[-wrong-third|-no-hints][-capN][-pX][-dueS][-wpcU][-swU][-qU]
    (e.g. serpt-wrong-third-cap10): the hints, then the slowdown cap, the speedup exponent, the
    share of the cores serving due jobs by deadline, the work per core in us and the start-wait
    bound in us, the re-ranking quantum in us."""
    for v in VARIANTS:
        if v[0] == name:
            return v
    m = re.fullmatch(r"serpt(-wrong-third|-no-hints)?(?:-cap([0-9.]+))?(?:-p([0-9.]+))?(?:-due([0-9.]+))?(?:-wpc([0-9.]+))?(?:-sw([0-9.]+))?(?:-q([0-9.]+))?",
                     name)
    if not m:
        raise SystemExit(f"sim_jobs: unknown variant {name!r}")
    hints = {"-wrong-third": "wrong", "-no-hints": "none"}.get(m.group(1), "exact")
    extra = (["--serpt-slowdown-cap", m.group(2)] if m.group(2) else []) + \
            (["--serpt-speedup-exponent", m.group(3)] if m.group(3) else []) + \
            (["--serpt-due-core-share", m.group(4)] if m.group(4) else []) + \
            (["--serpt-work-per-core-us", m.group(5)] if m.group(5) else []) + \
            (["--serpt-start-wait-us", m.group(6)] if m.group(6) else []) + \
            (["--serpt-quantum-us", m.group(7)] if m.group(7) else [])
    return (name, "serpt", hints, extra)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", default="bing:75,bing:90,finance:75,finance:90")
    ap.add_argument("--scale", type=float, default=0, help="job size factor (default workers / 2)")
    ap.add_argument("--first-round", type=int, default=0, help="rounds first-round .. first-round + rounds - 1")
    ap.add_argument("--tag", default="", help="appended to the output file's name")
    ap.add_argument("--variants", default=",".join(v[0] for v in VARIANTS))
    ap.add_argument("--label-suffix", default="", help="appended to each row's label (e.g. -before for an older build)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    scale = a.scale if a.scale > 0 else a.workers / 2
    chosen = [variant(name) for name in a.variants.split(",")]
    tmp = tempfile.mkdtemp(prefix="sim_jobs_")
    out = Path(a.out) / f"sim-{a.workers}cores{a.tag}.json"
    results = []
    # Made one at a time and written after each run, so that a long run shows its rows as it goes.
    for rnd in range(a.first_round, a.first_round + a.rounds):
        for spec in a.loads.split(","):
            trace, load = spec.split(":")
            wls = {}
            for label, policy, hints, extra in chosen:
                if hints not in wls:
                    wls[hints] = f"{tmp}/{trace}-{load}-{rnd}-{hints}.json"
                    with open(wls[hints], "w") as f:
                        json.dump(make_workload(trace, int(load) / 100, a.workers, rnd * a.jobs, a.jobs, scale, hints), f)
                m = run(a.sim, wls[hints], a.workers, policy, extra)
                print(f"{trace}-{load} round {rnd} {label}: {m}", file=sys.stderr, flush=True)
                results.append({"bench": f"{trace}-{load}", "round": rnd, "runtime": label + a.label_suffix, "workers": a.workers,
                                "scale": scale, "jobs": a.jobs, **m})
                out.write_text(json.dumps(results, indent=1) + "\n")
            for p in wls.values():
                os.remove(p)
    print(out)


if __name__ == "__main__":
    main()
