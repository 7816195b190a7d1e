#!/usr/bin/env python3
"""Old build against new under drep and drep-steal-boundary (ab_live.py runs only serpt from
both builds): bench_jobs_promptly on the Bing trace at 75% and 90% load, 1200 jobs, builds
alternated (reversed every other round). Usage (from bench/jobs): drep_ab.py OLD_EXE NEW_EXE ROUNDS"""
import statistics
import sys

from live_jobs import run_program

old, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
units = sorted(run_program(old, "bing", 0.5, 10, ["--calibrate", "1"])["unit_ns"] for _ in range(5))
unit = ["--unit-ns", str(units[2])]
rows = {}
for r in range(rounds):
    for load in (75, 90):
        for policy in ("drep", "drep-steal-boundary"):
            order = [("old", old), ("new", new)]
            for name, exe in (order if r % 2 == 0 else order[::-1]):
                m = run_program(exe, "bing", load / 100, 1200, unit + ["--policy", policy])
                rows.setdefault((load, policy, name), []).append(m["flow_ms_mean"])
                print(f"round {r} bing:{load} {policy} {name}: mean {m['flow_ms_mean']:.2f} ms", flush=True)
print("\nnew / old mean flow time, per round: median (range)")
for load in (75, 90):
    for policy in ("drep", "drep-steal-boundary"):
        ratio = [n / o for n, o in zip(rows[(load, policy, "new")], rows[(load, policy, "old")])]
        print(f"bing:{load} {policy:20} {statistics.median(ratio):.2f}x ({min(ratio):.2f}-{max(ratio):.2f})")
