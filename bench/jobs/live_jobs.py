#!/usr/bin/env python3
"""A short live comparison of the job policies with bench_jobs_promptly (the `jobs` suite's
Promptly program), rounds alternated (round r runs every variant once, in turn), written in
sim_jobs.py's row form so that sim_jobs_report.py tabulates both. start-wait p99 is the job
server's start_us p99 (start decision -> root task running; with no admission queue, the wait for
the first core). Not the suite's full run: fewer jobs, no peers; for a quick check on a machine
shared with other work (say so where the numbers are shown).

Usage: live_jobs.py --exe build/bench-bin/bench_jobs_promptly --out FILE.json [--jobs 300] [--rounds 3]
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

TRACES = Path(__file__).resolve().parent / "traces"
VARIANTS = [("serpt", ["--policy", "serpt", "--hints", "exact"]),
            ("serpt-wrong-third", ["--policy", "serpt", "--hints", "wrong"]),
            ("serpt-learned", ["--policy", "serpt"]),
            ("drep", ["--policy", "drep"]),
            ("drep-steal-boundary", ["--policy", "drep-steal-boundary"]),
            ("equi", ["--policy", "equi"])]


def run_program(exe, trace, rho, jobs, args, workers=2):
    """One run of the job program on a trace of bench/jobs/traces at load rho on `workers` workers: its metrics."""
    out = subprocess.run([exe, "--trace", str(TRACES / f"{trace}.trace"), "--rho", str(rho), "--jobs", str(jobs),
                          "--workers", str(workers)] + args, check=True, capture_output=True, text=True).stdout
    line = [x for x in out.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])["metrics"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", default="bing:75,bing:90,finance:75")
    a = ap.parse_args()
    rows = []
    for rnd in range(a.rounds):
        for spec in a.loads.split(","):
            trace, load = spec.split(":")
            for label, args in VARIANTS:
                m = run_program(a.exe, trace, int(load) / 100, a.jobs, args)
                row = {"bench": f"{trace}-{load}", "round": rnd, "runtime": label, "workers": 2, "jobs": a.jobs,
                       "flow_ms_mean": m["flow_ms_mean"], "flow_ms_p50": m["flow_ms_p50"],
                       "flow_ms_p99": m["flow_ms_p99"], "start_wait_ms_p99": m["start_us_p99"] / 1e3,
                       "slowdown_mean": m["slowdown_mean"], "unit_ns": m["unit_ns"], "run_util": m.get("run_util")}
                rows.append(row)
                print(row, file=sys.stderr, flush=True)
                Path(a.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
